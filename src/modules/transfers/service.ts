import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound, validationError, type ItemOutcome } from '../../core/errors.js';
import { withExtra, type Page, type PageExtra } from '../../db/pagination.js';
import { answer, movementBatch } from './pipeline.js';
import { rowsNamed, takesBatchPath, type MovementRequest } from './internal.js';
import type { PayoutOptions } from './payout-rules.js';
import { toTransferResponse } from './format.js';
import * as repo from './repo.js';
import type { CreateTransferBody, ListTransfersQuery, TransferResponse } from './schema.js';

export type TransferRow = repo.TransferRow;
export { toTransferResponse };

function unsupportedDestination(type: string, why: string): AppError {
  return validationError(
    [{ field: 'destination.destination_type', code: 'unsupported', message: why }],
    `Transfers to ${type} destinations are not available`,
  );
}

/**
 * POST /v1/transfer and /v1/transfers for what the batch path does not move (`takesBatchPath`):
 * a source other than an account, or a crypto destination. Both are refused: the service is fiat
 * only.
 */
export function refuseTransfer(body: CreateTransferBody): never {
  if (body.source.source_type !== 'internal_account') {
    throw validationError([
      { field: 'source.source_type', code: 'unsupported', message: 'Only internal_account sources are supported (fiat only)' },
    ]);
  }
  throw unsupportedDestination(body.destination.destination_type, 'This service is fiat only');
}

/**
 * A payout made on behalf of another module, in its transaction: an FX order settling its
 * proceeds to a standing settlement instruction (an external account of the order's customer).
 * The same path as POST /v1/transfer to an external account: the same checks, holds, limits,
 * events and lifecycle (dispatch, rail outcome, return).
 */
export async function settlementPayout(
  trx: Trx,
  ctx: RequestContext,
  payout: PayoutOptions & { sourceAccountId: string; externalAccountId: string; amount: string; customerId: string; description: string },
  config: Config,
): Promise<TransferRow> {
  const body: CreateTransferBody = {
    source: { source_type: 'internal_account', id: payout.sourceAccountId },
    destination: { destination_type: 'external_account', id: payout.externalAccountId },
    amount: payout.amount,
    customer_id: payout.customerId,
    description: payout.description,
  };
  return alone(trx, { ctx, config, body, payout });
}

/**
 * Takes a customer's spending lock (limits.ts) ahead of a payout that follows other postings in
 * the same transaction (an ssi order's conversion), so the lock order stays that of every
 * movement: account rows, then the spending lock, then balance rows. Reentrant.
 */
export async function lockCustomerSpending(trx: Trx, ctx: Scope, customerId: string): Promise<void> {
  await repo.lockSpendingKeys(trx, [repo.spendingKey(ctx, customerId)]);
}

/** A movement outside a batch (a batch of one): its transfer, or its error thrown. */
async function alone(trx: Trx, req: MovementRequest): Promise<TransferRow> {
  const [outcome] = await movementBatch(trx, [req]);
  if (!outcome!.ok) throw outcome!.error;
  return outcome!.row;
}

export { rowsNamed, takesBatchPath, type MovementRequest };
export { movementPipeline } from './pipeline.js';

/** Movements as one batch in `trx`, outside a gathered batch: one answer per request, in order. */
export async function createMovements(trx: Trx, reqs: MovementRequest[]): Promise<ItemOutcome<TransferResponse>[]> {
  return (await movementBatch(trx, reqs)).map(answer);
}

export async function getTransfer(db: Queryable, ctx: Scope, id: string): Promise<TransferResponse> {
  const row = await repo.findTransfer(db, ctx, id);
  if (!row) throw notFound('Transfer');
  return toTransferResponse(row);
}

/** A page of transfers; with `extra`, each item also carries the columns it joins (`extra`). */
export async function listTransfers<E = never>(
  db: Queryable,
  ctx: Scope,
  query: ListTransfersQuery,
  extra?: PageExtra<E>,
): Promise<Page<TransferResponse & { extra?: E }>> {
  const page = await repo.listTransfers(db, ctx, query, extra);
  return { ...page, items: page.items.map((r) => withExtra(toTransferResponse(r), r, extra)) };
}

/** What a rail reports about a payout (bank files: pain.002 statuses, camt returns and confirmations). */
export { applyRailOutcome, type RailOutcome } from './payout-lifecycle.js';

/** Payouts by id, whatever their business: the bank file cut reads their references. */
export function transfersByIds(db: Queryable, ids: string[]) {
  return repo.findTransfersByIds(db, ids);
}
