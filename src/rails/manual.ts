import type { Queryable } from '../db/client.js';
import type { RequestContext } from '../core/context.js';

type LedgerScope = Pick<RequestContext, 'tenantId' | 'environment'>;
import type { PayeeDetails, PayoutConnector, ScopedPayout, VerifyResult } from './payouts.js';
import * as repo from './repo.js';

/**
 * The live connector until a real one is configured: an operator pays each payout by hand in
 * the bank's own portal and then records the result with
 * `npm run --silent cli -- payouts settle|fail|return --transfer ID [--reason ...]`.
 * It has no name enquiry, so a payee whose details passed format validation is accepted.
 */
export class ManualPayouts implements PayoutConnector {
  readonly name = 'manual' as const;

  async verifyAccount(payee: PayeeDetails): Promise<VerifyResult> {
    return { verified: true, accountName: payee.accountName };
  }

  async submit(db: Queryable, payouts: ScopedPayout[]) {
    await repo.insertPayouts(db, this.name, payouts, null);
  }

  async status(db: Queryable, scope: LedgerScope, transferId: string) {
    const row = await repo.findPayout(db, scope, transferId);
    return row ? { state: row.state, reason: row.reason } : undefined;
  }
}
