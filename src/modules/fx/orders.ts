import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound, validationError, type ErrorDetail } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import * as ledger from '../../ledger/index.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
import * as approvals from '../approvals/service.js';
import { existingCustomerIds, requireCustomer } from '../customers/service.js';
import { recordEvent } from '../webhooks/service.js';
import { formatRate, parseRate, rateFromDb } from '../../lib/decimal.js';
import { fxCustomerRate, fxPricing } from '../pricing/service.js';
import { executeConversion, priceOrder, sourceCurrency, toOrderResponse, destinationCurrency, type Priced } from './execution.js';
import * as repo from './repo.js';
import type { CreateOrderBody, ListOrdersQuery, OrderResponse } from './schema.js';
import { assertPair, lockQuote, rateBook, redeemQuote, type LockedQuote } from './service.js';
import { resolveInstruction } from './ssi.js';
import type { RateBook } from '../../rails/fx.js';

/**
 * FX orders. `sell`: the customer gives `amount` of the pair's base from the source account and
 * receives quote currency (rounded down) in the destination account; `buy`: the customer
 * receives `amount` of the base and pays quote currency (rounded up). A market order (or one
 * with `quote_id`) executes at once; a limit order holds the source funds and waits as `pending`
 * for the limit-order worker (worker.ts).
 */

export interface Terms {
  orderType: 'market' | 'limit';
  side: 'buy' | 'sell';
  base: string;
  quote: string;
  amount: bigint;
  targetRate: bigint | null;
  /** The mid rate the order was priced from (the quote's, or the market's now). */
  mid: bigint;
  quoteRow?: LockedQuote;
}

/** The order's terms from its quote, locked: anything the body repeats must agree with the quote (400). */
export function termsOfQuote(body: CreateOrderBody, q: LockedQuote): Terms {
  const side = q.direction === 'BUY' ? 'buy' : 'sell';
  const details: ErrorDetail[] = [];
  const mismatch = (field: string, message: string) => details.push({ field, code: 'mismatch', message });
  if (body.order_type === 'limit') mismatch('order_type', 'An order with a quote_id is a market order');
  if (body.target_rate !== undefined) mismatch('target_rate', 'Only limit orders take a target_rate');
  if (body.pair && (body.pair.base !== q.fromCurrency || body.pair.quote !== q.toCurrency)) {
    mismatch('pair', `The quote is for ${q.fromCurrency}/${q.toCurrency}`);
  }
  if (body.side && body.side !== side) mismatch('side', `The quote is a ${q.direction} quote`);
  if (body.amount !== undefined && parseAmount(body.amount, q.fromCurrency) !== q.amount)
    mismatch('amount', 'Differs from the quoted amount');
  if (details.length > 0) throw validationError(details, 'The order does not match its quote');
  return {
    orderType: 'market',
    side,
    base: q.fromCurrency,
    quote: q.toCurrency,
    amount: q.amount,
    targetRate: null,
    mid: parseRate(q.midRate),
    quoteRow: q,
  };
}

async function termsFromQuote(trx: Trx, ctx: Scope, body: CreateOrderBody, quoteId: string, orderId: string): Promise<Terms> {
  const terms = termsOfQuote(body, await lockQuote(trx, ctx, quoteId));
  await redeemQuote(trx, ctx, quoteId, orderId);
  return terms;
}

/** The order's terms from its body, priced from the market's mid rate in `book`. */
export function termsFromBody(book: RateBook, body: CreateOrderBody, config: Config): Terms {
  const required = ['order_type', 'pair', 'amount', ...(body.order_type === 'limit' ? ['target_rate' as const] : [])] as const;
  const details: ErrorDetail[] = required
    .filter((f) => body[f] === undefined)
    .map((field) => ({ field, code: 'required', message: 'Required' }));
  if (body.order_type === 'market' && body.target_rate !== undefined) {
    details.push({ field: 'target_rate', code: 'invalid', message: 'Only limit orders take a target_rate' });
  }
  if (details.length > 0) throw validationError(details);
  const { base, quote } = body.pair!;
  const { mid } = assertPair(book, base, quote, ['pair.base', 'pair.quote'], config);
  return {
    orderType: body.order_type!,
    side: body.side ?? 'sell',
    base,
    quote,
    amount: parseAmount(body.amount, base),
    targetRate: body.order_type === 'limit' ? parseRate(body.target_rate, 'target_rate') : null,
    mid,
  };
}

const currencyMismatch = (field: string, message: string) =>
  new AppError('currency_mismatch', message, [{ field, code: 'currency_mismatch', message }]);

/**
 * The reference makes source_id and destination_id optional: the customer's newest active
 * account in the currency the order pays (source) or receives (destination).
 */
async function defaultAccountId(trx: Trx, ctx: Scope, customerId: string | undefined, currency: string, field: string): Promise<string> {
  if (!customerId) throw validationError([{ field, code: 'required', message: 'Required when customer_id is not given' }]);
  await requireCustomer(trx, ctx, customerId);
  const page = await accounts.listAccounts(trx, ctx, { customer_id: customerId, currency, status: 'active', page: 1, items_per_page: 1 });
  const id = page.items[0]?.id;
  if (!id)
    throw notFound(`Active ${currency} account`, [{ field, code: 'not_found', message: `No active ${currency} account of this customer` }]);
  return id;
}

/**
 * With destination_type `ssi` (ssi.ts) the proceeds are credited to the customer's newest active
 * account in the currency the order receives, then paid out to the instruction. A customer
 * without one gets a settlement account opened in that currency (`open`), shown on the order as
 * `settlement_account_id`: the reference's own examples expect an ssi order to work without the
 * customer opening an account by hand first.
 */
async function settlementAccountId(trx: Trx, ctx: Scope, customerId: string, currency: string, open?: SettlementOpener): Promise<string> {
  try {
    return await defaultAccountId(trx, ctx, customerId, currency, 'destination_id');
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'not_found') throw err;
    if (open) return open(customerId, currency);
    const message = `The proceeds settle through the customer's active ${currency} account, and the customer has none`;
    throw new AppError('unprocessable', message, [{ field: 'destination_id', code: 'no_settlement_account', message }]);
  }
}

/** Opens a customer's settlement account in a currency and answers its id. */
export type SettlementOpener = (customerId: string, currency: string) => Promise<string>;

/** The opener of createOrder: a regular account labelled as the order's settlement account. */
export const settlementOpener =
  (trx: Trx, ctx: Scope & Pick<RequestContext, 'settings'>, config: Config): SettlementOpener =>
  async (customerId, currency) =>
    (
      await accounts.createAccount(
        trx,
        ctx,
        { currency, type: 'regular', label: `${currency} settlement`, customer_id: customerId, metadata: { purpose: 'fx_settlement' } },
        config,
        { settlement: true },
      )
    ).id;

/** The accounts an order names, its defaults resolved; for an `ssi` order the destination is its settlement account. */
export async function resolveAccounts(trx: Trx, ctx: Scope, given: CreateOrderBody, terms: Terms, open?: SettlementOpener) {
  const instruction =
    given.destination_type === 'ssi'
      ? await resolveInstruction(trx, ctx, given.destination_id, given.customer_id, destinationCurrency(terms))
      : undefined;
  const sourceId = given.source_id ?? (await defaultAccountId(trx, ctx, given.customer_id, sourceCurrency(terms), 'source_id'));
  const destinationId = instruction
    ? await settlementAccountId(trx, ctx, instruction.customer_id, destinationCurrency(terms), open)
    : (given.destination_id ?? (await defaultAccountId(trx, ctx, given.customer_id, destinationCurrency(terms), 'destination_id')));
  if (sourceId === destinationId) {
    throw validationError([{ field: 'destination_id', code: 'invalid', message: 'Source and destination must differ' }]);
  }
  return { sourceId, destinationId, instruction };
}

/**
 * Source and destination, share-locked (`locked`), owned by the order's customer (or both by the
 * business), in the currencies the order pays and receives, and able to send and receive.
 * `customerExists`: whether the body's customer_id names a customer of the business.
 */
export function checkAccounts(
  body: CreateOrderBody,
  terms: Terms,
  ids: { sourceId: string; destinationId: string },
  locked: Map<string, accounts.MovementAccountRow>,
  customerExists: boolean,
) {
  const source = locked.get(ids.sourceId);
  if (!source) throw notFound('Source account', [{ field: 'source_id', code: 'not_found', message: 'No such account' }]);
  const destination = locked.get(ids.destinationId);
  if (!destination) throw notFound('Destination account', [{ field: 'destination_id', code: 'not_found', message: 'No such account' }]);
  const owner = body.customer_id ?? source.customer_id;
  if (!customerExists) throw notFound('Customer');
  const details: ErrorDetail[] = [];
  if (source.customer_id !== owner)
    details.push({ field: 'source_id', code: 'mismatch', message: 'The account does not belong to this customer' });
  if (destination.customer_id !== owner) {
    details.push({
      field: 'destination_id',
      code: 'mismatch',
      message: body.customer_id ? 'The account does not belong to this customer' : 'Both accounts must have the same owner',
    });
  }
  if (details.length > 0) throw validationError(details, "The accounts do not belong to the order's customer");
  const sourceCcy = sourceCurrency(terms);
  const destinationCcy = destinationCurrency(terms);
  if (source.currency !== sourceCcy)
    throw currencyMismatch(
      'source_id',
      `A ${terms.side} order on ${terms.base}/${terms.quote} pays from a ${sourceCcy} account; this one holds ${source.currency}`,
    );
  if (destination.currency !== destinationCcy) {
    throw currencyMismatch(
      'destination_id',
      `A ${terms.side} order on ${terms.base}/${terms.quote} settles to a ${destinationCcy} account; this one holds ${destination.currency}`,
    );
  }
  accounts.assertCanDebit(source, 'source_id');
  accounts.assertCanCredit(destination, 'destination_id');
  return { source, destination };
}

/** An order's accounts (resolveAccounts), share-locked and checked (checkAccounts). */
async function loadAccounts(trx: Trx, ctx: Scope, body: CreateOrderBody, terms: Terms, open?: SettlementOpener) {
  const ids = await resolveAccounts(trx, ctx, body, terms, open);
  const locked = await accounts.lockForMovement(trx, ctx, [ids.sourceId, ids.destinationId]);
  const customerExists = !body.customer_id || (await existingCustomerIds(trx, ctx, [body.customer_id])).has(body.customer_id);
  return { ...checkAccounts(body, terms, ids, locked, customerExists), instruction: ids.instruction };
}

/** 422 insufficient_funds as an order names it: what it pays plus the fee. */
export const insufficientForOrder = () =>
  new AppError('insufficient_funds', undefined, [
    { field: 'amount', code: 'insufficient_funds', message: 'The amount to pay plus the fee exceeds the available balance' },
  ]);

export function insufficient(err: unknown): unknown {
  return err instanceof AppError && err.code === 'insufficient_funds' ? insufficientForOrder() : err;
}

/** The spread and fee an order is priced with: its quote's, else the business's now. */
export const orderPricing = (ctx: Pick<RequestContext, 'settings'>, config: Config, terms: Terms) =>
  terms.quoteRow ?? fxPricing(ctx.settings, config);

/** The rate a market order executes at: its quote's, else the customer rate from the market's mid now. */
export const marketRate = (terms: Terms, spreadBps: number) =>
  terms.quoteRow ? parseRate(terms.quoteRow.rate) : fxCustomerRate(terms.mid, spreadBps, terms.side);

/** The columns every new order starts with, whatever it does next (execute, wait for its limit or approval). */
export function newOrder(
  ctx: Scope,
  id: string,
  terms: Terms,
  parties: { source: accounts.MovementAccountRow; destination: accounts.MovementAccountRow; instruction?: { id: string } | undefined },
  pricing: { spreadBps: number; feeBps: number },
): NewOrder {
  const { source, destination, instruction } = parties;
  return {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: source.customer_id,
    order_type: terms.orderType,
    side: terms.side,
    base: terms.base,
    quote: terms.quote,
    amount: terms.amount,
    spread_bps: pricing.spreadBps,
    fee_bps: pricing.feeBps,
    source_type: 'account',
    source_id: source.id,
    ...(instruction
      ? { destination_type: 'ssi', destination_id: instruction.id, settlement_account_id: destination.id }
      : { destination_type: 'account', destination_id: destination.id, settlement_account_id: null }),
    quote_id: terms.quoteRow?.id ?? null,
    created_by_role: approvals.API_KEY_MAKER.role,
  };
}

export async function createOrder(trx: Trx, ctx: RequestContext, body: CreateOrderBody, config: Config): Promise<OrderResponse> {
  const id = newId();
  const terms = body.quote_id
    ? await termsFromQuote(trx, ctx, body, body.quote_id, id)
    : termsFromBody(await rateBook(trx, ctx), body, config);
  const { source, destination, instruction } = await loadAccounts(trx, ctx, body, terms, settlementOpener(trx, ctx, config));
  const pricing = orderPricing(ctx, config, terms);
  const common = newOrder(ctx, id, terms, { source, destination, instruction }, pricing);
  const policy = approvals.policyOf(ctx);
  if (policy.fxOrders) return placeForApproval(trx, ctx, policy, common, terms);
  if (terms.orderType === 'limit') return placeLimitOrder(trx, ctx, config, common, terms.targetRate!);

  const rate = marketRate(terms, pricing.spreadBps);
  const priced = priceOrder(terms, rate, pricing.feeBps);
  const order = await repo.insertOrder(trx, { ...common, status: 'pending' });
  try {
    const env = { config, settings: ctx.settings };
    const done = await executeConversion(trx, ctx, env, order, source, destination, { ...priced, mid: terms.mid, rate });
    return toOrderResponse(done);
  } catch (err) {
    throw insufficient(err);
  }
}

export type NewOrder = Pick<
  repo.OrderRow,
  | 'id'
  | 'tenant_id'
  | 'environment'
  | 'customer_id'
  | 'order_type'
  | 'side'
  | 'base'
  | 'quote'
  | 'amount'
  | 'spread_bps'
  | 'fee_bps'
  | 'source_type'
  | 'source_id'
  | 'destination_type'
  | 'destination_id'
  | 'settlement_account_id'
  | 'quote_id'
  | 'created_by_role'
>;

/**
 * Reserves what an order may cost on its source account: a ledger hold toward the fx_position
 * account of the source currency, voided when the order executes (in the same transaction as
 * the conversion) or ends without executing, exactly once either way.
 */
async function holdSource(trx: Trx, ctx: Scope, order: NewOrder, priced: Priced, kind: string, metadata: Record<string, unknown>) {
  const currency = sourceCurrency(order);
  const position = await ledger.systemAccount(trx, ctx, 'fx_position', currency);
  try {
    return await ledger.hold(trx, ctx, {
      debitAccountId: order.source_id,
      creditAccountId: position,
      amount: priced.given + priced.fee,
      currency,
      kind,
      reference: order.id,
      metadata: { fx_order_id: order.id, ...metadata },
    });
  } catch (err) {
    throw insufficient(err);
  }
}

/**
 * A limit order reserves the most it can cost (a ledger hold on the source account toward its
 * fx_position account): `amount` for a sell, the cost at the target rate for a buy (the worker
 * only buys at that rate or better), plus the fee. Priced at the target here so an order that
 * could never settle (too small, too large) is refused now. The worker voids the hold and books
 * the conversion in one transaction.
 */
async function placeLimitOrder(trx: Trx, ctx: Scope, config: Config, common: NewOrder, target: bigint): Promise<OrderResponse> {
  const atTarget = priceOrder(common, target, common.fee_bps);
  const hold = await holdSource(trx, ctx, common, atTarget, 'fx_limit_order', { target_rate: formatRate(target) });
  const row = await repo.insertOrder(trx, {
    ...common,
    status: 'pending',
    target_rate: formatRate(target),
    hold_id: hold.id,
    expires_at: limitOrderExpiry(config),
  });
  return toOrderResponse(row);
}

export const limitOrderExpiry = (config: Pick<Config, 'FX_LIMIT_ORDER_TTL_HOURS'>) =>
  new Date(Date.now() + config.FX_LIMIT_ORDER_TTL_HOURS * 3_600_000);

/** How the approvals page names an order. */
export function describeOrder(
  o: Pick<repo.OrderRow, 'order_type' | 'side' | 'amount' | 'base' | 'quote' | 'target_rate' | 'destination_type' | 'destination_id'>,
): string {
  const what = `FX ${o.order_type} order: ${o.side} ${formatAmount(o.amount, o.base)} ${o.base} ${o.side === 'sell' ? 'for' : 'with'} ${o.quote}`;
  const priced = o.target_rate === null ? what : `${what} at ${formatRate(rateFromDb(o.target_rate))} or better`;
  return o.destination_type === 'ssi' ? `${priced}, paid out to external account ${o.destination_id}` : priced;
}

/**
 * With approvals on (maker-checker), an order waits in `waiting_approval` and nothing executes:
 * its cost is held on the source account (a market order priced at its quote's or the current
 * rate, a limit order at its target), and an approval is requested. An approval of an order with
 * a quote expires with the quote, so an order never executes at a stale locked rate. Approval,
 * rejection and expiry: approval.ts.
 */
async function placeForApproval(
  trx: Trx,
  ctx: Scope,
  policy: approvals.ApprovalPolicy,
  common: NewOrder,
  terms: Terms,
): Promise<OrderResponse> {
  const limit = terms.orderType === 'limit';
  const rate = limit ? terms.targetRate! : marketRate(terms, common.spread_bps);
  const priced = priceOrder(common, rate, common.fee_bps);
  const hold = await holdSource(trx, ctx, common, priced, limit ? 'fx_limit_order' : 'fx_order', { waiting_approval: true });
  const expiresAt = approvals.expiryOf(policy, terms.quoteRow?.expiresAt);
  const row = await repo.insertOrder(trx, {
    ...common,
    status: 'waiting_approval',
    target_rate: limit ? formatRate(rate) : null,
    hold_id: hold.id,
    expires_at: expiresAt,
  });
  await approvals.requestApproval(trx, ctx, policy, {
    kind: 'fx_order',
    subjectId: row.id,
    summary: describeOrder(row),
    amount: row.amount,
    currency: row.base,
    expiresBy: expiresAt,
  });
  return toOrderResponse(row);
}

export async function getOrder(db: Queryable, ctx: Scope, id: string): Promise<OrderResponse> {
  const row = await repo.findOrder(db, ctx, id);
  if (!row) throw notFound('Order');
  return toOrderResponse(row);
}

export async function listOrders(db: Queryable, ctx: Scope, query: ListOrdersQuery): Promise<Page<OrderResponse>> {
  const page = await repo.listOrders(db, ctx, query);
  return { ...page, items: page.items.map(toOrderResponse) };
}

/** Ends a waiting order without executing it: releases its hold exactly once. */
export async function closePendingOrder(
  trx: Trx,
  ctx: Scope,
  order: repo.OrderRow,
  status: 'cancelled' | 'expired' | 'rejected',
  reason: string | null = null,
) {
  if (order.hold_id) await ledger.voidHold(trx, ctx, order.hold_id);
  const row = await repo.updateOrder(trx, ctx, order.id, { status, rejection_reason: reason });
  const response = toOrderResponse(row);
  if (status !== 'rejected') await recordEvent(trx, ctx, status === 'cancelled' ? 'fx.order.cancelled' : 'fx.order.expired', response);
  return response;
}

export async function cancelOrder(trx: Trx, ctx: Scope, id: string): Promise<OrderResponse> {
  const order = await repo.findOrder(trx, ctx, id, 'update');
  if (!order) throw notFound('Order');
  if (order.status !== 'pending') {
    throw new AppError('invalid_state_transition', `The order cannot be cancelled in status ${order.status}`);
  }
  return closePendingOrder(trx, ctx, order, 'cancelled');
}
