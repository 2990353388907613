import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { checkTransactionLimit, requireFeature } from '../features/service.js';
import * as repo from './repo.js';

/**
 * The KYC gates of money leaving an account: ONE function called by every transfer path
 * (internal transfers and payouts), inside the transfer's own unit of work (its savepoint under
 * the group-commit batcher), before any money moves, so a refusal rolls back only that transfer.
 * The business's own accounts (customer_id null) are not limited.
 */
export async function assertCustomerMayMove(
  trx: Trx,
  ctx: RequestContext,
  config: Config,
  move: { customerId: string | null; currency: string; amount: bigint; international?: boolean },
): Promise<void> {
  if (move.customerId === null) return;
  // International payouts (another currency or SWIFT) are a feature of their own.
  if (move.international) await requireFeature(trx, ctx, move.customerId, 'international_transfers');
  const spentTodayMinor = await repo.sentToday(trx, ctx, move.customerId, move.currency, new Date());
  await checkTransactionLimit(trx, ctx, move.customerId, move.currency, move.amount, { spentTodayMinor, config });
}
