import type { Queryable } from '../db/client.js';
import type { RequestContext } from '../core/context.js';

type LedgerScope = Pick<RequestContext, 'tenantId' | 'environment'>;
import { payeeIdentifier, type PayeeDetails, type PayoutConnector, type ScopedPayout, type VerifyResult } from './payouts.js';
import * as repo from './repo.js';

/**
 * The sandbox rail. Deterministic: an account identifier ending in `0000` fails verification
 * (docs/api-rules.md#sandbox); everything else verifies under the name given. Payouts it accepts settle
 * on their own `delayMs` later (the `rail-settlement` job), unless a simulation endpoint
 * (`/v1/simulations/transfers/{id}/complete|fail|return`) decides first; in a currency a sandbox
 * bank connection holds, they go out in its pain.001 files and settle by its answers instead.
 */
export class SandboxPayouts implements PayoutConnector {
  readonly name = 'sandbox' as const;
  constructor(private readonly delayMs: number) {}

  async verifyAccount(payee: PayeeDetails): Promise<VerifyResult> {
    if (payeeIdentifier(payee).endsWith('0000')) {
      return { verified: false, reason: 'The receiving institution could not verify this account' };
    }
    return { verified: true, accountName: payee.accountName };
  }

  async submit(db: Queryable, payouts: ScopedPayout[]) {
    await repo.insertPayouts(db, this.name, payouts, new Date(Date.now() + this.delayMs), { timerUnlessFiled: true });
  }

  async status(db: Queryable, scope: LedgerScope, transferId: string) {
    const row = await repo.findPayout(db, scope, transferId);
    return row ? { state: row.state, reason: row.reason } : undefined;
  }
}
