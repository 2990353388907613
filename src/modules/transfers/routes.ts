import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../app.js';
import { envelope, ok } from '../../http/envelope.js';
import { pageSchema } from '../../http/pagination.js';
import { CreateTransferBody, ListTransfersQuery, TransferIdParams, TransferResponse } from './schema.js';
import * as service from './service.js';

const tags = ['Transfers'];

export function transferRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    // One operation under two paths: the same Idempotency-Key on either is the same request.
    for (const path of ['/v1/transfer', '/v1/transfers']) {
      app.post(
        path,
        {
          schema: {
            tags,
            summary: 'Create a transfer',
            description:
              'Internal transfers (destination_type internal_account) complete at once: 422 insufficient_funds moves nothing, ' +
              '409 account_frozen when the source is frozen, 422 currency_mismatch across currencies.',
            body: CreateTransferBody,
            response: { 200: envelope(TransferResponse) },
          },
        },
        (req, reply) => deps.idempotency.run(req, reply, 'transfers.create', (trx) => service.createTransfer(trx, req.ctx, req.body)),
      );
    }

    app.get(
      '/v1/transfers',
      { schema: { tags, summary: 'List transfers', querystring: ListTransfersQuery, response: { 200: envelope(pageSchema(TransferResponse)) } } },
      async (req) => ok(await service.listTransfers(deps.db, req.ctx, req.query)),
    );

    app.get(
      '/v1/transfers/:transfer_id',
      { schema: { tags, summary: 'Get a transfer', params: TransferIdParams, response: { 200: envelope(TransferResponse) } } },
      async (req) => ok(await service.getTransfer(deps.db, req.ctx, req.params.transfer_id)),
    );
  };
}
