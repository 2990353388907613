import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
import { pageSchema } from '../../db/pagination.js';
import { CreateCustomerBody, CustomerIdParams, CustomerResponse, ListCustomersQuery, UpdateCustomerBody } from './schema.js';
import { customerKycView } from '../kyc/service.js';
import * as service from './service.js';

const tags = ['Customers'];

export function customerRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/customers',
      {
        schema: {
          tags,
          summary: 'Add a customer',
          body: CreateCustomerBody,
          response: { 200: envelope(CustomerResponse) },
          errors: ['customer_exists'],
        },
      },
      (req, reply) => deps.idempotency.run(req, reply, 'customers.create', (trx) => service.createCustomer(trx, req.ctx, req.body)),
    );

    app.get(
      '/v1/customers',
      {
        schema: {
          tags,
          summary: 'List customers',
          querystring: ListCustomersQuery,
          response: { 200: envelope(pageSchema(CustomerResponse)) },
          errors: [],
        },
      },
      async (req) => ok(await service.listCustomers(deps.db, req.ctx, req.query, customerKycView)),
    );

    app.get(
      '/v1/customers/:customer_id',
      { schema: { tags, summary: 'Get a customer', params: CustomerIdParams, response: { 200: envelope(CustomerResponse) }, errors: [] } },
      async (req) => ok(await service.getCustomer(deps.db, req.ctx, req.params.customer_id, customerKycView)),
    );

    app.put(
      '/v1/customers/:customer_id',
      {
        schema: {
          tags,
          summary: 'Update a customer',
          description: 'Only the fields sent change. The path decides the customer; a different id in the body is 400.',
          params: CustomerIdParams,
          body: UpdateCustomerBody,
          response: {
            200: envelope(z.object({ message: z.string(), status: z.boolean(), customer: CustomerResponse })),
          },
          errors: ['customer_exists'],
        },
      },
      async (req) => {
        const customer = await deps.inTransaction((trx) =>
          service.updateCustomer(trx, req.ctx, req.params.customer_id, req.body, deps.config, customerKycView),
        );
        return ok({ message: 'customer updated successfully', status: true, customer });
      },
    );
  };
}
