import type { Db, Trx } from '../../db/client.js';
import type { Environment } from '../../http/context.js';
import { AppError } from '../../http/errors.js';
import * as ledger from '../../ledger/index.js';
import type { Job } from '../../workers/index.js';
import * as accounts from '../accounts/service.js';
import { customerRate, rateFromDb } from './decimal.js';
import { executeConversion, priceOrder, type Priced } from './execution.js';
import { closePendingOrder } from './orders.js';
import * as repo from './repo.js';
import { rateBook } from './service.js';

export type LimitOutcome = 'idle' | 'waiting' | 'completed' | 'expired' | 'rejected';

/** Why a limit order can no longer execute (its accounts changed while it waited), if it can't. */
function blocked(source: accounts.AccountRow | undefined, destination: accounts.AccountRow | undefined): string | null {
  if (!source || !destination) return 'account_not_found';
  try {
    accounts.assertCanDebit(source, 'source_id');
    accounts.assertCanCredit(destination, 'destination_id');
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return null;
}

/** Executes a limit order whose target was reached: the hold is voided and the conversion booked, together. */
async function execute(trx: Trx, order: repo.OrderRow, mid: bigint, rate: bigint): Promise<LimitOutcome> {
  const scope = { tenantId: order.tenant_id, environment: order.environment as Environment };
  const locked = await accounts.lockForMovement(trx, scope, [order.source_id, order.destination_id]);
  const source = locked.get(order.source_id);
  const destination = locked.get(order.destination_id);
  const reason = blocked(source, destination);
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
  await executeConversion(trx, scope, order, source!, destination!, { ...priced, mid, rate });
  return 'completed';
}

/**
 * Looks at the least recently checked waiting limit order not yet seen since `since`, in its own transaction (claimed with
 * FOR UPDATE SKIP LOCKED): expires it after expires_at, executes it when the customer rate has
 * reached target_rate (sell: rate >= target; buy: rate <= target), otherwise notes the check.
 */
export async function processNextLimitOrder(db: Db, since: Date): Promise<LimitOutcome> {
  return db.transaction().execute(async (trx) => {
    const [order] = await repo.claimWaitingOrders(trx, since, 1);
    if (!order) return 'idle';
    const scope = { tenantId: order.tenant_id, environment: order.environment as Environment };
    if (order.expires_at && order.expires_at.getTime() <= Date.now()) {
      await closePendingOrder(trx, scope, order, 'expired');
      return 'expired';
    }
    const mid = (await rateBook(trx, scope)).mid(order.base, order.quote);
    const target = order.target_rate === null ? null : rateFromDb(order.target_rate);
    if (mid && target !== null) {
      const rate = customerRate(mid.mid, order.spread_bps, order.side);
      if (order.side === 'sell' ? rate >= target : rate <= target) return execute(trx, order, mid.mid, rate);
    }
    await repo.markChecked(trx, [order.id]);
    return 'waiting';
  });
}

const BATCH = 50;

/**
 * The background job: each tick looks at every waiting order once (up to BATCH, then says
 * "more" so the loop continues at once), each order in its own short transaction.
 */
export function limitOrderJob(db: Db): Job {
  let since: Date | undefined;
  return {
    name: 'fx-limit-orders',
    intervalMs: 1_000,
    async tick() {
      // A continuing tick keeps its start time, so a long queue is walked once, not re-read.
      since ??= await repo.databaseNow(db);
      for (let i = 0; i < BATCH; i++) {
        if ((await processNextLimitOrder(db, since)) === 'idle') {
          since = undefined;
          return false;
        }
      }
      return true;
    },
  };
}
