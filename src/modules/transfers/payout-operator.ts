import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import type { Environment } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { isUuid } from '../../lib/ids.js';
import * as rails from '../../rails/repo.js';
import { forceRailOutcome, type RailOutcome } from './payout-lifecycle.js';

/**
 * The operator's side of the live manual connector: after paying (or failing to pay) a payout in
 * the bank's own portal, record the result. Only payouts submitted to the manual connector can
 * be settled by hand; sandbox payouts use the simulation endpoints. The CLI owns the transaction.
 */
export async function operatorOutcome(
  trx: Trx,
  transferId: string,
  outcome: RailOutcome,
  reason: string | null,
  config: Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>,
) {
  if (!isUuid(transferId)) throw new AppError('validation_failed', '--transfer must be a transfer id (UUID)');
  const payout = await rails.findPayoutByTransfer(trx, transferId);
  // An operator's message: the likely mistake is a worker that is not running, so it says so.
  if (!payout) throw new AppError('not_found', 'No payout was submitted for this transfer yet (is the worker running?)');
  if (payout.connector !== 'manual')
    throw new AppError('invalid_state_transition', `This payout belongs to the ${payout.connector} connector, not the manual one`);
  const ctx = { tenantId: payout.tenant_id, environment: payout.environment as Environment };
  return forceRailOutcome(trx, ctx, transferId, outcome, reason, config);
}
