import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { recordEvent } from '../webhooks/service.js';
import { invalidTransition } from './errors.js';
import { toTransferResponse } from './format.js';
import { refundSpend } from './limits.js';
import { awaitsApproval, release } from './payout-lifecycle.js';
import * as repo from './repo.js';
import type { TransferResponse } from './schema.js';

/**
 * What happens to a payout waiting for approval (maker-checker) once its approval is decided or
 * expires. It was created `pending` with its funds held (the contract's transfer statuses have
 * no `waiting_approval`; the wait is `payout.approval` in its metadata, and the dispatch job
 * skips it). The approvals module has made the guarded transition of the approval row; each
 * function here also acts only on a locked transfer that is still pending and waiting.
 *
 * - approved: the dispatch job hands it to its rail, exactly as a payout made without approvals.
 * - rejected / expired: `failed` (failure_reason `approval_rejected` / `approval_expired`), the
 *   holds released once, the customer's daily spend given back, transfer.status.failed.
 */
async function waitingPayout(trx: Queryable, scope: Scope, id: string): Promise<repo.TransferRow> {
  const row = await repo.findTransferForUpdate(trx, scope, id);
  if (!row || row.status !== 'pending' || !awaitsApproval(row)) {
    throw invalidTransition(row?.status ?? 'missing', 'approved or rejected');
  }
  return row;
}

export async function approvePayout(trx: Queryable, scope: Scope, id: string): Promise<TransferResponse> {
  const row = await waitingPayout(trx, scope, id);
  await repo.setPayoutApproval(trx, scope, id, 'approved');
  return toTransferResponse(row);
}

export async function rejectPayout(trx: Queryable, scope: Scope, id: string, outcome: 'rejected' | 'expired', reason: string | null) {
  const row = await waitingPayout(trx, scope, id);
  await repo.setPayoutApproval(trx, scope, id, outcome);
  const why = outcome === 'expired' ? 'approval_expired' : `approval_rejected${reason ? `: ${reason}` : ''}`;
  const moved = await release(trx, scope, row, 'failed', why);
  if (!moved) throw new AppError('invalid_state_transition');
  await refundSpend(trx, scope, row.customer_id, row.currency, row.amount, row.created_at);
  const response = toTransferResponse(moved);
  await recordEvent(trx, scope, 'transfer.status.failed', response);
  return response;
}
