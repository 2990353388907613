import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import { scopeKey, type RequestContext } from '../../core/context.js';
import { notFound, validationError } from '../../core/errors.js';
import { parseAmount } from '../../lib/money.js';
import type * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import { requireCustomer } from '../customers/service.js';
import type * as transactions from '../transactions/service.js';
import { computeFee } from '../pricing/service.js';
import { currencyMismatch } from './errors.js';
import type * as repo from './repo.js';
import type { CreateTransferBody } from './schema.js';
import type { PayoutOptions } from './payout-rules.js';

/** One money movement (an internal transfer, a card funding or a payout) as a request of the batch path. */
export interface MovementRequest {
  ctx: RequestContext;
  config: Config;
  body: CreateTransferBody;
  /** A payout made by another module (an FX order settling to its standing instruction). */
  payout?: PayoutOptions;
}

/**
 * A request that passed every check that needs no balance: what the batch will try to post (or,
 * for a payout, to hold). Every kind moves `amount` from `source` to `destination` (an account, a
 * card's own balance, a payee) and `fee` to the business's fee account.
 */
export interface Prepared {
  req: MovementRequest;
  id: string;
  kind: 'internal_transfer' | 'card_funding' | 'payout';
  source: accounts.MovementAccountRow;
  destination: { id: string; customer_id: string | null };
  currency: string;
  amount: bigint;
  fee: bigint;
  /** Where the fee goes: the business's account in the currency, or the id reserved for its first one (batch.ts). */
  feeAccount?: { id: string };
}

const ACCOUNT_DESTINATIONS = ['internal_account', 'account', 'customer_account'];

/** Whether a transfer takes the batch posting path (batch.ts): every fiat movement from an account does. */
export const takesBatchPath = (body: CreateTransferBody) =>
  body.source.source_type === 'internal_account' &&
  (ACCOUNT_DESTINATIONS.includes(body.destination.destination_type) ||
    ['card', 'external_account'].includes(body.destination.destination_type));

/** The account rows a request of the batch share-locks: its source, and its destination when that is an account. */
export const accountsNamed = (body: CreateTransferBody): string[] =>
  ACCOUNT_DESTINATIONS.includes(body.destination.destination_type) && body.destination.id
    ? [body.source.id, body.destination.id]
    : [body.source.id];

/**
 * The rows a request's batch locks that the request names, for the batcher (db/batcher.ts
 * `touches`): the accounts it share-locks; for a card funding, the card's balance row; for a
 * payout, its business's payouts as a whole (each credits the business's settlement or
 * fx_position account in its currency, found only later); and, when it may pay a fee, its
 * business's fee accounts (a payout always may: the configured payout fees apply by default).
 */
export function rowsNamed({ ctx, body }: Pick<MovementRequest, 'ctx' | 'body'>): string[] {
  const { destination } = body;
  const fees = ctx.settings.fees;
  // Every fee of the business in a currency goes to one account (batch.ts attachFeeAccounts).
  const feeAccounts = `${scopeKey(ctx)}:fee_accounts`;
  const named = accountsNamed(body);
  if (destination.destination_type === 'external_account') named.push(`${scopeKey(ctx)}:payouts`, feeAccounts);
  else if (destination.destination_type === 'card') {
    if (destination.id) named.push(destination.id);
    if (fees?.card_funding) named.push(feeAccounts);
  } else if (fees?.internal_transfer) named.push(feeAccounts);
  return named;
}

/** The request's source account among the batch's share-locked rows (404 when it is not one of the business's). */
export function lockedSource(body: CreateTransferBody, locked: Map<string, accounts.MovementAccountRow>): accounts.MovementAccountRow {
  const source = locked.get(body.source.id);
  if (!source) throw notFound('Source account', [{ field: 'source.id', code: 'not_found', message: 'No such account' }]);
  return source;
}

/** With `customer_id` given, the customer exists (404) and owns the source account (400). */
export async function assertCustomerOwnsSource(
  trx: Trx,
  ctx: RequestContext,
  body: CreateTransferBody,
  source: accounts.MovementAccountRow,
) {
  if (!body.customer_id) return;
  await requireCustomer(trx, ctx, body.customer_id);
  if (source.customer_id !== body.customer_id) {
    throw validationError([{ field: 'customer_id', code: 'mismatch', message: 'The source account does not belong to this customer' }]);
  }
}

/** Checks on the body alone, before any row is locked (400s). */
export function checkShape(body: CreateTransferBody): string {
  const destinationId = body.destination.id;
  if (!destinationId) {
    const message = body.destination.destination_type === 'card' ? 'Required: the card id' : 'Required';
    throw validationError([{ field: 'destination.id', code: 'required', message }]);
  }
  if (destinationId === body.source.id) {
    throw validationError([{ field: 'destination.id', code: 'invalid', message: 'Source and destination must differ' }]);
  }
  return destinationId;
}

/**
 * Every check of one transfer against its share-locked account rows (404, 409, 422), and its
 * amount and fee. Balances and limits are checked later, in memory, by the batch.
 */
export async function prepare(
  trx: Trx,
  req: MovementRequest,
  id: string,
  locked: Map<string, accounts.MovementAccountRow>,
): Promise<Prepared> {
  const { body, ctx } = req;
  const destinationId = checkShape(body);
  const source = lockedSource(body, locked);
  const destination = locked.get(destinationId);
  if (!destination) throw notFound('Destination account', [{ field: 'destination.id', code: 'not_found', message: 'No such account' }]);
  await assertCustomerOwnsSource(trx, ctx, body, source);
  const currency = source.currency;
  const amount = parseAmount(body.amount, currency);
  if (body.currency && body.currency !== currency) throw currencyMismatch('currency', 'source account', currency);
  if (destination.currency !== currency) {
    throw currencyMismatch('destination.id', 'destination account', destination.currency, currency);
  }
  accounts.assertCanDebit(source);
  accounts.assertCanCredit(destination);
  return { req, id, kind: 'internal_transfer', source, destination, currency, amount, fee: internalFee(req, currency, amount) };
}

/** The fee of an internal transfer of `amount` in `currency` (the business's pricing). */
export const internalFee = (req: MovementRequest, currency: string, amount: bigint) =>
  computeFee(req.ctx.settings, 'internal_transfer', currency, amount);

/**
 * What an internal transfer locks after its account rows, told before any row is read: its
 * source as this process knows it (accounts.knownAccount: the owner, whose spending lock and
 * counter it takes, and the currency), when no fee applies (no fee account to find or create).
 * Undefined when the process does not know the source yet, a fee applies, or the destination is
 * not an account.
 */
export function knownSource(req: MovementRequest): accounts.KnownAccount | undefined {
  if (!ACCOUNT_DESTINATIONS.includes(req.body.destination.destination_type)) return undefined;
  const source = accounts.knownAccount(req.ctx, req.body.source.id);
  if (!source) return undefined;
  let amount: bigint;
  try {
    amount = parseAmount(req.body.amount, source.currency);
  } catch {
    return source; // refused before it posts: what it locks is locked for nothing, which is harmless
  }
  return internalFee(req, source.currency, amount) === 0n ? source : undefined;
}

/** Source pays amount + fee, destination receives amount, the business's own account the fee. */
export function legsOf(p: Prepared): ledger.Leg[] {
  const legs: ledger.Leg[] = [
    { accountId: p.source.id, amount: -(p.amount + p.fee), currency: p.currency },
    { accountId: p.destination.id, amount: p.amount, currency: p.currency },
  ];
  if (p.feeAccount && p.fee > 0n) legs.push({ accountId: p.feeAccount.id, amount: p.fee, currency: p.currency });
  return legs;
}

/**
 * One account transaction per account touched: source (out, with the fee), destination (in), fee
 * account (in). Each side is written out in full (no spread of shared fields): this runs for every
 * transfer, and a spread into a literal with more properties copies through V8's slow path.
 */
export function movementOf(p: Prepared, posting: ledger.PostedTransaction): transactions.MovementRecord {
  const description = p.req.body.description ?? '';
  const side = (
    accountId: string,
    customerId: string | null,
    direction: 'in' | 'out',
    amount: bigint,
    fee: bigint,
  ): transactions.AccountSide => ({
    accountId,
    customerId,
    direction,
    amount,
    fee,
    currency: p.currency,
    channel: 'internal',
    transactionType: 'internal_transfer',
    sendingAccountId: p.source.id,
    receivingAccountId: p.destination.id,
    description,
  });
  const sides = [
    side(p.source.id, p.source.customer_id, 'out', p.amount, p.fee),
    side(p.destination.id, p.destination.customer_id, 'in', p.amount, 0n),
  ];
  if (p.feeAccount && p.fee > 0n) {
    sides.push({
      accountId: p.feeAccount.id,
      customerId: null,
      direction: 'in',
      amount: p.fee,
      fee: 0n,
      currency: p.currency,
      channel: 'internal',
      transactionType: 'fee_charge',
      sendingAccountId: p.source.id,
      receivingAccountId: p.feeAccount.id,
      description: 'Transfer fee',
    });
  }
  return movementRecordOf(p, sides, posting);
}

/**
 * The transfer row as every kind fills it: a completed movement of `amount` in one currency. Each
 * kind then sets what is its own (its ledger transaction or hold, a payout's rail and rate).
 */
export function baseTransferRow(p: Prepared, transactionId: string): repo.TransferRow {
  const { ctx, body } = p.req;
  const now = new Date();
  return {
    id: p.id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    client_reference: body.client_reference ?? null,
    description: body.description ?? '',
    customer_id: p.source.customer_id,
    destination_customer_id: p.destination.customer_id,
    source_type: 'internal_account',
    source_id: p.source.id,
    destination_type: body.destination.destination_type,
    destination_id: p.destination.id,
    rail: null,
    currency: p.currency,
    amount: p.amount,
    fee: p.fee,
    local_amount: p.amount,
    local_currency: p.currency,
    rate: null,
    status: 'completed',
    failure_reason: null,
    ledger_transaction_id: null,
    transaction_id: transactionId,
    hold_id: null,
    metadata: body.metadata ?? {},
    created_at: now,
    updated_at: now,
  };
}

/** The account transactions of a movement: its reference and the client's, and each account's side. */
export function movementRecordOf(
  p: Prepared,
  sides: transactions.AccountSide[],
  posting?: ledger.PostedTransaction,
): transactions.MovementRecord {
  const { body } = p.req;
  return {
    reference: p.id,
    clientReference: body.client_reference ?? null,
    clientMetadata: body.metadata ? JSON.stringify(body.metadata) : null,
    ...(posting ? { posting } : {}),
    sides,
  };
}

export function transferRow(p: Prepared, posting: ledger.PostedTransaction, transactionId: string): repo.TransferRow {
  const row = baseTransferRow(p, transactionId);
  row.ledger_transaction_id = posting.id;
  return row;
}
