import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { AppError, notFound, validationError } from '../../http/errors.js';
import type { Page } from '../../http/pagination.js';
import { newId } from '../../lib/ids.js';
import { externalTransfer } from './external.js';
import { cardFunding } from './card.js';
import { internalTransfer } from './internal.js';
import { toTransferResponse } from './format.js';
import * as repo from './repo.js';
import type { CreateTransferBody, ListTransfersQuery, TransferResponse } from './schema.js';

type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;
export type TransferRow = repo.TransferRow;
export { toTransferResponse };

function unsupportedDestination(type: string, why: string): AppError {
  return validationError(
    [{ field: 'destination.destination_type', code: 'unsupported', message: why }],
    `Transfers to ${type} destinations are not available`,
  );
}

/**
 * POST /v1/transfer and /v1/transfers. One branch per destination type: each branch validates,
 * moves the money through the ledger, writes the transfer and its transactions and events, all
 * in `trx` (the idempotency transaction). Card and external-account branches plug in here.
 */
export async function createTransfer(trx: Trx, ctx: RequestContext, body: CreateTransferBody, config: Config): Promise<TransferResponse> {
  if (body.source.source_type !== 'internal_account') {
    throw validationError([{ field: 'source.source_type', code: 'unsupported', message: 'Only internal_account sources are supported (fiat only)' }]);
  }
  const id = newId();
  switch (body.destination.destination_type) {
    case 'internal_account':
    case 'account':
    case 'customer_account':
      return toTransferResponse(await internalTransfer(trx, ctx, config, id, body));
    case 'card':
      return toTransferResponse(await cardFunding(trx, ctx, id, body));
    case 'external_account':
      if (!body.destination.id) throw validationError([{ field: 'destination.id', code: 'required', message: 'Required' }]);
      return toTransferResponse(await externalTransfer(trx, ctx, config, id, body));
    case 'crypto_wallet':
      throw unsupportedDestination('crypto_wallet', 'This service is fiat only');
  }
}

export async function getTransfer(db: Queryable, ctx: Scope, id: string): Promise<TransferResponse> {
  const row = await repo.findTransfer(db, ctx, id);
  if (!row) throw notFound('Transfer');
  return toTransferResponse(row);
}

export async function listTransfers(db: Queryable, ctx: Scope, query: ListTransfersQuery): Promise<Page<TransferResponse>> {
  const page = await repo.listTransfers(db, ctx, query);
  return { ...page, items: page.items.map(toTransferResponse) };
}
