import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../app.js';
import type { Trx } from '../../db/client.js';
import { GroupCommit } from '../../db/group-commit.js';
import { envelope, ok } from '../../http/envelope.js';
import { pageSchema } from '../../http/pagination.js';
import { CreateTransferBody, ListTransfersQuery, TransferIdParams, TransferResponse } from './schema.js';
import { lockTransferBatch } from './limits.js';
import * as service from './service.js';

const tags = ['Transfers'];

export function transferRoutes(deps: Deps): FastifyPluginAsyncZod {
  // PostgreSQL: transfers share commits (group commit, one savepoint per transfer, so each is
  // still all-or-nothing with its own idempotency record). PGlite runs one transaction at a time.
  const batcher =
    deps.dbKind === 'postgres' && deps.config.TRANSFER_BATCH_SIZE > 1
      ? new GroupCommit(deps.db, lockTransferBatch, { maxBatch: deps.config.TRANSFER_BATCH_SIZE, lanes: deps.config.TRANSFER_BATCH_LANES })
      : undefined;

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
              '409 account_frozen when the source is frozen, 422 currency_mismatch across currencies. ' +
              'Transfers to an external_account (payouts) hold amount + fee and answer `pending`; the rail (taken from the payee type, ' +
              '`rail` optional) then moves them to processing, completed, failed or returned (transfer.status.* events). When the payee ' +
              'is paid in another currency the rate is locked now: `local_amount`, `local_currency` and `rate` show what it receives. ' +
              '`additional_information` (the remitter) is required for bank_account and mobile_money payees.',
            body: CreateTransferBody,
            response: { 200: envelope(TransferResponse) },
          },
        },
        (req, reply) => {
          const keys = [req.body.source.id, ...(req.body.destination.id ? [req.body.destination.id] : [])];
          const executor = batcher ? (unit: (trx: Trx) => Promise<string>) => batcher.run(unit, keys) : undefined;
          return deps.idempotency.run(req, reply, 'transfers.create', (trx) => service.createTransfer(trx, req.ctx, req.body, deps.config), {
            ...(executor ? { executor } : {}),
          });
        },
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
