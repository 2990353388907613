import type { Config } from '../config.js';
import type { Db, Trx } from '../db/client.js';
import type { Environment, Scope } from '../core/context.js';
import type { Job } from '../core/job.js';
import * as approvals from '../modules/approvals/service.js';
import { decidePayee } from '../modules/external-accounts/service.js';
import { approveOrder, expireOrder, rejectOrder } from '../modules/fx/approval.js';
import { approvePayout, rejectPayout } from '../modules/transfers/payout-approval.js';
import { REAL_TIME, type Timeline } from '../core/clock.js';

/**
 * Maker-checker outcomes, applied to the waiting item. The approvals module owns the approval
 * rows and knows nothing of FX orders, payouts or payees (they depend on it, not the reverse);
 * this is where a decision meets its item. Used by the dashboard (approve / reject) and by the
 * expiry job below. Each outcome runs in ONE transaction with the guarded transition of the
 * approval row, the item's own guarded transition, its holds and its events.
 */
/** The whole configuration: an approved FX order settling to an ssi makes a payout (fees, limits). */
type ApprovalConfig = Config;
type Outcome = 'approved' | 'rejected' | 'expired';

async function applyToItem(
  trx: Trx,
  scope: Scope,
  config: ApprovalConfig,
  row: approvals.ApprovalRow,
  outcome: Outcome,
  checker: approvals.Checker | null,
): Promise<void> {
  const reason = row.reason;
  switch (row.kind) {
    case 'fx_order':
      if (outcome === 'approved') await approveOrder(trx, scope, row.subject_id, checker!, config);
      else if (outcome === 'rejected') await rejectOrder(trx, scope, row.subject_id, checker!, reason);
      else await expireOrder(trx, scope, row.subject_id);
      return;
    case 'payout':
      if (outcome === 'approved') await approvePayout(trx, scope, row.subject_id);
      else await rejectPayout(trx, scope, row.subject_id, outcome, reason);
      return;
    case 'payee':
      await decidePayee(trx, scope, row.subject_id, outcome, reason, config);
      return;
  }
}

/**
 * Approves or rejects a waiting item in one transaction: 409 when it was already decided or has
 * expired (racing deciders and the expiry job resolve once), 403 for its own maker, and nothing
 * at all when applying the outcome fails (an approved market order the source can no longer pay:
 * 422, and the item keeps waiting).
 */
export async function decideApproval(
  db: Db,
  scope: Scope,
  config: ApprovalConfig,
  id: string,
  decision: 'approved' | 'rejected',
  checker: approvals.Checker,
  reason: string | null,
  inTransaction?: (trx: Trx, row: approvals.ApprovalRow) => Promise<void>,
): Promise<approvals.ApprovalRow> {
  return db.transaction().execute(async (trx) => {
    const row = await approvals.decide(trx, scope, id, decision, checker, reason);
    await applyToItem(trx, scope, config, row, decision, checker);
    await inTransaction?.(trx, row);
    return row;
  });
}

/**
 * The expiry job: each due approval expires in its own transaction (the guarded update is the
 * claim, so several workers never expire one twice, and a decision that got there first wins).
 * Returns true when a full batch was found.
 */
export async function expireDueApprovals(db: Db, config: ApprovalConfig, batch = 50, t: Timeline = REAL_TIME): Promise<boolean> {
  const due = await approvals.dueExpiries(db, batch, t);
  const failures: unknown[] = [];
  for (const d of due) {
    const scope = { tenantId: d.tenant_id, environment: d.environment as Environment };
    try {
      await db.transaction().execute(async (trx) => {
        const row = await approvals.expireApproval(trx, scope, d.id, t);
        if (row) await applyToItem(trx, scope, config, row, 'expired', null);
      });
    } catch (err) {
      failures.push(err); // rolled back, retried next tick; the others still expire now
    }
  }
  if (failures.length > 0) throw new AggregateError(failures, `${failures.length} approval expiries failed`);
  return due.length === batch;
}

export function approvalExpiryJob(db: Db, config: ApprovalConfig): Job {
  return { name: 'approval-expiry', intervalMs: 10_000, tick: () => expireDueApprovals(db, config) };
}
