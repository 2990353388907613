import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { customerOwnersOf, lockForBatch } from '../accounts/service.js';
import { checkTransactionLimit, requireFeature } from '../features/service.js';
import * as repo from './repo.js';

/**
 * The KYC gates of money leaving an account: ONE function called by every transfer path
 * (internal transfers and payouts), inside the transfer's own unit of work (its savepoint under
 * the group-commit batcher), before any money moves, so a refusal rolls back only that transfer.
 * The business's own accounts (customer_id null) are not limited. A lock per customer, held to
 * the commit, makes concurrent transfers of one customer count each other.
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
  await repo.lockCustomerSpending(trx, ctx, move.customerId);
  const spentTodayMinor = await repo.sentToday(trx, ctx, move.customerId, move.currency, new Date());
  await checkTransactionLimit(trx, ctx, move.customerId, move.currency, move.amount, { spentTodayMinor, config });
}

/**
 * The group-commit batcher's up-front locks for transfers: account rows, then the spending locks
 * of every customer owning one of them, then balances, the order a single transfer takes them
 * in (rows, assertCustomerMayMove, ledger), so batches and lone transfers cannot deadlock.
 */
export async function lockTransferBatch(trx: Trx, keys: string[]): Promise<void> {
  await lockForBatch(trx, keys, async () => {
    const owners = await customerOwnersOf(trx, keys);
    await repo.lockSpendingKeys(trx, owners.map((o) => repo.spendingKey({ tenantId: o.tenant_id, environment: o.environment as RequestContext['environment'] }, o.customer_id)));
  });
}
