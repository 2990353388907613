import { sql } from 'kysely';
import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import type { Checker } from '../approvals/service.js';
import { rateFromDb } from '../../lib/decimal.js';
import { fxCustomerRate } from '../pricing/service.js';
import { creditedAccountId, destinationCurrency, executeConversion, priceOrder, toOrderResponse } from './execution.js';
import { closePendingOrder, insufficient, limitOrderExpiry } from './orders.js';
import * as repo from './repo.js';
import type { OrderResponse } from './schema.js';
import { rateBook } from './service.js';
import { recheckInstruction } from './ssi.js';

/**
 * What happens to an order in `waiting_approval` once its approval is decided or expires. The
 * approvals module has already made the guarded transition of the approval row; each function
 * here also takes the order only from `waiting_approval` under its row lock, so it acts once.
 *
 * - approved, limit order: `pending` with its hold kept; the limit-order worker takes it from
 *   there exactly as if it had been placed without approvals.
 * - approved, market order: the hold is voided and the conversion booked in this transaction, at
 *   the quote's rate (the approval expires with the quote) or the current rate: the order is
 *   `completed` (fx.order.completed), exactly as an order placed without approvals. Should the
 *   source no longer cover it (a buy whose rate moved), nothing is written and the order keeps
 *   waiting: the approver sees 422 insufficient_funds and may reject it.
 * - rejected: `rejected`, hold released (no event type for it: docs/api-rules.md#closed-lists).
 * - expired: `expired`, hold released, fx.order.expired.
 */
async function waitingOrder(trx: Trx, scope: Scope, id: string): Promise<repo.OrderRow> {
  const order = await repo.findOrder(trx, scope, id, 'update');
  if (!order || order.status !== 'waiting_approval') {
    throw new AppError('invalid_state_transition', `The order is ${order?.status ?? 'gone'}, not waiting for approval`);
  }
  return order;
}

const now = () => sql<Date>`now()` as unknown as Date;

export async function approveOrder(trx: Trx, scope: Scope, id: string, checker: Checker, config: Config): Promise<OrderResponse> {
  const order = await waitingOrder(trx, scope, id);
  const approved = { approved_by_user_id: checker.userId, approved_at: now() };
  if (order.order_type === 'limit') {
    const row = await repo.updateOrder(trx, scope, id, { ...approved, status: 'pending', expires_at: limitOrderExpiry(config) });
    return toOrderResponse(row);
  }
  const credited = creditedAccountId(order);
  const locked = await accounts.lockForMovement(trx, scope, [order.source_id, credited]);
  const source = locked.get(order.source_id);
  const destination = locked.get(credited);
  if (!source || !destination) throw notFound('Account');
  accounts.assertCanDebit(source, 'source_id');
  accounts.assertCanCredit(destination, 'destination_id');
  if (order.destination_type === 'ssi') await recheckInstruction(trx, scope, order, destinationCurrency(order));
  const { mid, rate } = await executionRate(trx, scope, order);
  const priced = priceOrder(order, rate, order.fee_bps);
  const pending = await repo.updateOrder(trx, scope, id, { ...approved, status: 'pending' });
  if (order.hold_id) await ledger.voidHold(trx, scope, order.hold_id);
  try {
    return toOrderResponse(await executeConversion(trx, scope, { config }, pending, source, destination, { ...priced, mid, rate }));
  } catch (err) {
    throw insufficient(err);
  }
}

/** The quote's locked rate, or the market's now with the order's spread. */
async function executionRate(trx: Trx, scope: Scope, order: repo.OrderRow): Promise<{ mid: bigint; rate: bigint }> {
  if (order.quote_id) {
    const quote = await repo.findQuote(trx, scope, order.quote_id);
    if (!quote) throw notFound('Quote');
    return { mid: rateFromDb(quote.mid_rate), rate: rateFromDb(quote.rate) };
  }
  const mid = (await rateBook(trx, scope)).mid(order.base, order.quote);
  if (!mid) throw new AppError('unprocessable', `No market rate for ${order.base}/${order.quote} now; try again later`);
  return { mid: mid.mid, rate: fxCustomerRate(mid.mid, order.spread_bps, order.side) };
}

export async function rejectOrder(trx: Trx, scope: Scope, id: string, checker: Checker, reason: string | null): Promise<OrderResponse> {
  const order = await waitingOrder(trx, scope, id);
  if (order.hold_id) await ledger.voidHold(trx, scope, order.hold_id);
  const row = await repo.updateOrder(trx, scope, id, {
    status: 'rejected',
    rejected_by_user_id: checker.userId,
    rejected_at: now(),
    rejection_reason: reason ?? 'rejected_by_approver',
  });
  return toOrderResponse(row);
}

export async function expireOrder(trx: Trx, scope: Scope, id: string): Promise<OrderResponse> {
  return closePendingOrder(trx, scope, await waitingOrder(trx, scope, id), 'expired', 'approval_expired');
}
