import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import {
  BulkIdParams,
  BulkResponse,
  CreateBulkBody,
  CreateTransferBody,
  ListTransfersQuery,
  MAX_BULK_ITEMS,
  TransferIdParams,
  TransferResponse,
} from './schema.js';
import { createBulk, getBulk } from './bulk.js';
import { gathered } from '../../http/idempotency-batch.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as service from './service.js';
import { concurrencyGate } from '../../lib/gate.js';

type Routes = ReturnType<typeof routes>;

export function transferRoutes(deps: Deps): FastifyPluginAsyncZod {
  // Every money movement from an account (internal transfer, card funding, payout) goes through
  // the batch path (docs/money-path.md): concurrent requests share one transaction and a handful
  // of multi-row statements, each still all-or-nothing with its own idempotency record.
  // A batch started beside a stalled one leaves out the requests on its accounts (db/batcher.ts).
  const movements = gathered(deps, 'transfers.create', 'transfers', service.movementPipeline, service.rowsNamed);
  const create = (req: FastifyRequest<{ Body: CreateTransferBody }>, reply: FastifyReply) =>
    service.takesBatchPath(req.body)
      ? movements.run(req, reply, { ctx: req.ctx, config: deps.config, body: req.body })
      : deps.idempotency.run(req, reply, 'transfers.create', async () => service.refuseTransfer(req.body));
  return async (app) => {
    const r = routes(app, ['Transfers']);
    createRoutes(r, create);
    bulkAndReadRoutes(r, deps);
  };
}

/** POST /v1/transfer and /v1/transfers. */
function createRoutes(
  r: Routes,
  create: (req: FastifyRequest<{ Body: CreateTransferBody }>, reply: FastifyReply) => Promise<{ data: TransferResponse; error: null }>,
): void {
  // One operation under two paths: the same Idempotency-Key on either is the same request.
  for (const path of ['/v1/transfer', '/v1/transfers']) {
    r.post(
      path,
      {
        summary: 'Create a transfer',
        description:
          'Internal transfers (destination_type internal_account) complete at once: 422 insufficient_funds moves nothing, ' +
          '409 account_frozen when the source is frozen, 422 currency_mismatch across currencies. ' +
          'Transfers to an external_account (payouts) hold amount + fee and answer `pending`; the rail (taken from the payee type, ' +
          '`rail` optional) then moves them to processing, completed, failed or returned (transfer.status.* events). When the payee ' +
          'is paid in another currency the rate is locked now: `local_amount`, `local_currency` and `rate` show what it receives. ' +
          '`additional_information` (the remitter) is required for bank_account and mobile_money payees.',
        body: CreateTransferBody,
        data: TransferResponse,
        errors: [
          'not_found',
          'account_frozen',
          'account_inactive',
          'card_blocked',
          'currency_mismatch',
          'invalid_amount',
          'insufficient_funds',
          'limit_exceeded',
          'feature_not_active',
          'kyc_level_insufficient',
          'invalid_state_transition',
        ],
      },
      (req, reply) => create(req, reply),
    );
  }
}

/** The bulk (POST and GET) and the reads of transfers. */
function bulkAndReadRoutes(r: Routes, deps: Deps): void {
  // TRANSFER_BULK_CONCURRENCY (src/config.ts): a bulk's memory is held until it ends.
  const bulkGate = concurrencyGate(deps.config.TRANSFER_BULK_CONCURRENCY);
  r.post(
    '/v1/transfers/bulk',
    {
      bodyLimit: 4 * 1024 * 1024,
      summary: 'Create a bulk of internal transfers',
      description:
        `Up to ${MAX_BULK_ITEMS} internal transfers, each with its own client_reference (unique within the bulk). ` +
        'Every item is decided on its own, in order, through the same batch path as POST /v1/transfers: `completed` with its transfer, ' +
        'or `failed` with the error it alone got (insufficient_funds, limit_exceeded, …); never all-or-nothing across items. ' +
        'Idempotent as a whole under its Idempotency-Key. GET /v1/transfers/bulk/{bulk_id} shows it again.',
      body: CreateBulkBody,
      data: BulkResponse,
      errors: [],
    },
    (req, reply) =>
      bulkGate(() => deps.idempotency.run(req, reply, 'transfers.bulk', (trx) => createBulk(trx, req.ctx, req.body, deps.config))),
  );

  r.get(
    '/v1/transfers/bulk/:bulk_id',
    { summary: 'Get a bulk of transfers', params: BulkIdParams, data: BulkResponse, errors: [] },
    async (req) => ok(await getBulk(deps.db, req.ctx, req.params.bulk_id)),
  );

  r.get(
    '/v1/transfers',
    { summary: 'List transfers', querystring: ListTransfersQuery, data: pageSchema(TransferResponse), errors: [] },
    async (req) => ok(await service.listTransfers(deps.readDb(), req.ctx, req.query)),
  );

  r.get(
    '/v1/transfers/:transfer_id',
    { summary: 'Get a transfer', params: TransferIdParams, data: TransferResponse, errors: [] },
    async (req) => ok(await service.getTransfer(deps.db, req.ctx, req.params.transfer_id)),
  );
}
