import type { Config } from '../config.js';
import type { Environment } from '../core/context.js';
import { ManualPayouts } from './manual.js';
import type { PayoutConnector } from './payouts.js';
import { SandboxPayouts } from './sandbox.js';

export type { PayeeDetails, PayoutConnector, PayoutState, Rail, ScopedPayout } from './payouts.js';

/** The payout connector of an environment: sandbox always simulates; live uses the manual one. */
export function payoutConnector(environment: Environment, config: Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>): PayoutConnector {
  return environment === 'sandbox' ? new SandboxPayouts(config.SANDBOX_RAIL_DELAY_MS) : new ManualPayouts();
}
