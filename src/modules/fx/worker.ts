import type { Config } from '../../config.js';
import type { Db, Trx } from '../../db/client.js';
import type { Environment } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import type { Job } from '../../core/job.js';
import * as accounts from '../accounts/service.js';
import { rateFromDb } from '../../lib/decimal.js';
import { fxCustomerRate } from '../pricing/service.js';
import { creditedAccountId, destinationCurrency, executeConversion, priceOrder, type Priced } from './execution.js';
import { closePendingOrder } from './orders.js';
import * as repo from './repo.js';
import type { RateBook } from '../../rails/fx.js';
import { rateBook } from './service.js';
import { recheckInstruction } from './ssi.js';

export type LimitOutcome = 'idle' | 'waiting' | 'completed' | 'expired' | 'rejected';

/**
 * Why a limit order can no longer execute (its accounts, or its settlement instruction, changed
 * while it waited), if it can't.
 */
async function blocked(
  trx: Trx,
  order: repo.OrderRow,
  source: accounts.AccountRow | undefined,
  destination: accounts.AccountRow | undefined,
): Promise<string | null> {
  if (!source || !destination) return 'account_not_found';
  try {
    accounts.assertCanDebit(source, 'source_id');
    accounts.assertCanCredit(destination, 'destination_id');
    if (order.destination_type === 'ssi') await recheckInstruction(trx, scopeOf(order), order, destinationCurrency(order));
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return null;
}

/** Executes a limit order whose target was reached: the hold is voided and the conversion booked, together. */
async function execute(trx: Trx, config: Config, order: repo.OrderRow, mid: bigint, rate: bigint): Promise<LimitOutcome> {
  const scope = { tenantId: order.tenant_id, environment: order.environment as Environment };
  const credited = creditedAccountId(order);
  const locked = await accounts.lockForMovement(trx, scope, [order.source_id, credited]);
  const source = locked.get(order.source_id);
  const destination = locked.get(credited);
  const reason = await blocked(trx, order, source, destination);
  if (reason) {
    await closePendingOrder(trx, scope, order, 'rejected', reason);
    return 'rejected';
  }
  let priced: Priced;
  try {
    priced = priceOrder(order, rate, order.fee_bps);
  } catch (err) {
    // A much better rate than the target can push the proceeds past the amount limit.
    if (!(err instanceof AppError)) throw err;
    await closePendingOrder(trx, scope, order, 'rejected', err.code);
    return 'rejected';
  }
  // The hold reserved the most this order can cost (sell: amount; buy: the cost at the target
  // rate, which the current better-or-equal rate never exceeds), so the posting cannot fail.
  if (order.hold_id) await ledger.voidHold(trx, scope, order.hold_id);
  await executeConversion(trx, scope, { config }, order, source!, destination!, { ...priced, mid, rate });
  return 'completed';
}

type Due = 'expire' | { mid: bigint; rate: bigint } | null;

/** What a waiting order needs now: expiry, execution at the current rate, or nothing. */
function dueAction(order: repo.OrderRow, book: RateBook, now: number): Due {
  if (order.expires_at && order.expires_at.getTime() <= now) return 'expire';
  const mid = book.mid(order.base, order.quote);
  if (!mid || order.target_rate === null) return null;
  const target = rateFromDb(order.target_rate);
  const rate = fxCustomerRate(mid.mid, order.spread_bps, order.side);
  return (order.side === 'sell' ? rate >= target : rate <= target) ? { mid: mid.mid, rate } : null;
}

const scopeOf = (o: repo.OrderRow) => ({ tenantId: o.tenant_id, environment: o.environment as Environment });

/**
 * One cheap scan transaction: claims up to `limit` waiting orders not checked since `since`
 * (FOR UPDATE SKIP LOCKED, so workers split the queue), notes them all checked, and returns the
 * ids of those that are due. Each due order is then settled in its own transaction, so one
 * failure never rolls back the others (a failed one is simply due again on the next pass).
 */
export async function scanWaitingOrders(db: Db, since: Date, limit: number): Promise<{ claimed: number; due: string[] }> {
  return db.transaction().execute(async (trx) => {
    const orders = await repo.claimWaitingOrders(trx, since, limit);
    const books = new Map<string, RateBook>();
    const due: string[] = [];
    for (const order of orders) {
      const key = `${order.tenant_id}:${order.environment}`;
      if (!books.has(key)) books.set(key, await rateBook(trx, scopeOf(order)));
      if (dueAction(order, books.get(key)!, Date.now())) due.push(order.id);
    }
    await repo.markChecked(
      trx,
      orders.map((o) => o.id),
    );
    return { claimed: orders.length, due };
  });
}

/**
 * Settles one due order in its own transaction, re-checked under its row lock (the rate may have
 * moved back, or another worker or a cancel got there first): expires it after expires_at, or
 * executes it when the customer rate has reached target_rate (sell: rate >= target; buy: rate <= target).
 */
export async function settleLimitOrder(db: Db, config: Config, id: string): Promise<LimitOutcome> {
  try {
    return await db.transaction().execute(async (trx) => {
      const order = await repo.claimPendingOrder(trx, id);
      if (!order) return 'idle';
      const action = dueAction(order, await rateBook(trx, scopeOf(order)), Date.now());
      if (action === 'expire') {
        await closePendingOrder(trx, scopeOf(order), order, 'expired');
        return 'expired';
      }
      return action ? execute(trx, config, order, action.mid, action.rate) : 'waiting';
    });
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return refuseSettlement(db, id, err);
  }
}

/**
 * An ssi order whose payout was refused at execution (a payout limit, the customer's KYC limits):
 * that transaction wrote nothing; this one rejects the order (reason: the refusal's code) and
 * releases its hold, so it does not come back every second. Other orders rethrow as before.
 */
async function refuseSettlement(db: Db, id: string, err: AppError): Promise<LimitOutcome> {
  return db.transaction().execute(async (trx) => {
    const order = await repo.claimPendingOrder(trx, id);
    if (!order) return 'idle';
    if (order.destination_type !== 'ssi') throw err;
    await closePendingOrder(trx, scopeOf(order), order, 'rejected', `settlement_refused: ${err.code}`);
    return 'rejected';
  });
}

const BATCH = 200;

/**
 * The background job: each pass looks at every waiting order once, BATCH per scan (a full batch
 * says "more", so the loop continues at once), and settles the due ones.
 */
export function limitOrderJob(db: Db, config: Config): Job {
  let since: Date | undefined;
  return {
    name: 'fx-limit-orders',
    intervalMs: 1_000,
    async tick() {
      // A continuing pass keeps its start time, so a long queue is walked once, not re-read.
      since ??= await repo.databaseNow(db);
      const { claimed, due } = await scanWaitingOrders(db, since, BATCH);
      for (const id of due) await settleLimitOrder(db, config, id);
      if (claimed < BATCH) since = undefined;
      return claimed === BATCH;
    },
  };
}
