import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import { CreateCustomerBody, CustomerIdParams, CustomerResponse, ListCustomersQuery, UpdateCustomerBody } from './schema.js';
import { customerKycView } from '../kyc/service.js';
import * as service from './service.js';

const tags = ['Customers'];

export function customerRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, tags);
    r.post(
      '/v1/customers',
      {
        summary: 'Add a customer',
        body: CreateCustomerBody,
        data: CustomerResponse,
        errors: ['customer_exists'],
      },
      (req, reply) => deps.idempotency.run(req, reply, 'customers.create', (trx) => service.createCustomer(trx, req.ctx, req.body)),
    );

    r.get(
      '/v1/customers',
      {
        summary: 'List customers',
        querystring: ListCustomersQuery,
        data: pageSchema(CustomerResponse),
        errors: [],
      },
      async (req) => ok(await service.listCustomers(deps.readDb(), req.ctx, req.query, customerKycView)),
    );

    r.get(
      '/v1/customers/:customer_id',
      {
        summary: 'Get a customer',
        params: CustomerIdParams,
        data: CustomerResponse,
        errors: [],
      },
      async (req) => ok(await service.getCustomer(deps.db, req.ctx, req.params.customer_id, customerKycView)),
    );

    r.put(
      '/v1/customers/:customer_id',
      {
        summary: 'Update a customer',
        description: 'Only the fields sent change. The path decides the customer; a different id in the body is 400.',
        params: CustomerIdParams,
        body: UpdateCustomerBody,
        data: z.object({ message: z.string(), status: z.boolean(), customer: CustomerResponse }),
        errors: ['customer_exists'],
      },
      async (req) => {
        const customer = await deps.inTransaction((trx) =>
          service.updateCustomer(trx, req.ctx, req.params.customer_id, req.body, customerKycView, deps.config),
        );
        return ok({ message: 'customer updated successfully', status: true, customer });
      },
    );
  };
}
