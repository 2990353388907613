import type { Config } from '../../config.js';
import type { Db, Queryable } from '../../db/client.js';
import type { Environment, RequestContext } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import { payoutConnector, type PayoutState, type Rail } from '../../rails/index.js';
import * as rails from '../../rails/repo.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import { refundSpend } from './limits.js';
import type { PayoutMetadata } from './external.js';
import { toTransferResponse } from './format.js';
import { channelOf } from './payout-rules.js';
import * as repo from './repo.js';

/**
 * A payout's life after it was created `pending` with its funds held:
 *   pending -> processing (handed to the rail) -> completed (holds posted)
 *                                              -> failed (holds released)
 *   processing -> returned (holds released); completed -> returned (a reversing transaction).
 * Every step is a conditional update on the locked transfer row, so each outcome takes effect
 * exactly once however many workers, simulations or operators race for it.
 */
type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;
export type RailOutcome = 'settled' | 'failed' | 'returned';
type ConnectorConfig = Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>;

export function payoutOf(row: repo.TransferRow): PayoutMetadata {
  return (row.metadata as { payout: PayoutMetadata }).payout;
}

/** A payout above the business's approval threshold that nobody has approved yet (maker-checker). */
export const awaitsApproval = (row: repo.TransferRow) => payoutOf(row)?.approval === 'waiting_approval';

function invalidTransition(status: string, action: string): AppError {
  return new AppError('invalid_state_transition', `A ${status} transfer cannot be ${action}`);
}

/** Hands a pending payout to its rail (inside `db`: the sandbox and manual connectors are DB-backed). */
async function markProcessing(db: Queryable, ctx: Scope, row: repo.TransferRow) {
  const moved = await repo.moveTransfer(db, ctx, row.id, ['pending'], { status: 'processing' });
  if (moved) await recordEvent(db, ctx, 'transfer.status.processing', toTransferResponse(moved));
  return moved;
}

/**
 * The dispatch job: submits pending payouts to their connector (outside any transaction, as a
 * real connector calls a partner), then records `processing`. Submitting twice is harmless:
 * connectors are idempotent per transfer.
 */
export async function dispatchPendingPayouts(db: Db, config: ConnectorConfig, batch = 20): Promise<boolean> {
  const pending = await repo.pendingPayouts(db, batch);
  for (const p of pending) {
    const ctx = { tenantId: p.tenant_id, environment: p.environment as Environment };
    const row = await repo.findTransfer(db, ctx, p.id);
    if (!row || row.status !== 'pending' || awaitsApproval(row)) continue;
    await submit(db, ctx, config, row);
    await db.transaction().execute(async (trx) => {
      const locked = await repo.findTransferForUpdate(trx, ctx, p.id);
      if (locked?.status === 'pending' && !awaitsApproval(locked)) await markProcessing(trx, ctx, locked);
    });
  }
  return pending.length === batch;
}

async function submit(db: Queryable, ctx: Scope, config: ConnectorConfig, row: repo.TransferRow) {
  const payout = payoutOf(row);
  await payoutConnector(ctx.environment, config).submit(db, ctx, {
    transferId: row.id,
    rail: row.rail as Rail,
    amount: row.local_amount ?? row.amount,
    currency: row.local_currency ?? row.currency,
    payee: payout.payee,
  });
}

/** The source account's side of a completed payout, and of the FX leg when there is one. */
async function settle(trx: Queryable, ctx: Scope, row: repo.TransferRow) {
  const payout = payoutOf(row);
  const postings = [(await ledger.postHold(trx, ctx, row.hold_id!)).transaction];
  if (payout.fee_hold_id) postings.push((await ledger.postHold(trx, ctx, payout.fee_hold_id)).transaction);
  if (row.rate && row.local_amount !== null && row.local_currency) {
    // The FX leg: the local currency leaves the FX position for the rail's settlement account.
    const position = await ledger.systemAccount(trx, ctx, 'fx_position', row.local_currency);
    const settlement = await ledger.systemAccount(trx, ctx, 'settlement', row.local_currency);
    await ledger.post(trx, ctx, {
      kind: 'payout_fx',
      reference: row.id,
      metadata: {
        transfer_id: row.id,
        rate: row.rate,
        mid_rate: payout.mid_rate,
        spread_bps: payout.spread_bps,
        source_amount: String(row.amount),
        source_currency: row.currency,
      },
      legs: [
        { accountId: position, amount: -row.local_amount, currency: row.local_currency },
        { accountId: settlement, amount: row.local_amount, currency: row.local_currency },
      ],
    });
  }
  if (row.transaction_id) await transactions.finishPending(trx, ctx, row.transaction_id, 'completed', postings);
  return repo.moveTransfer(trx, ctx, row.id, ['processing'], { status: 'completed', ledger_transaction_id: postings[0]!.id });
}

export async function release(trx: Queryable, ctx: Scope, row: repo.TransferRow, status: 'failed' | 'returned', reason: string) {
  const payout = payoutOf(row);
  await ledger.voidHold(trx, ctx, row.hold_id!);
  if (payout.fee_hold_id) await ledger.voidHold(trx, ctx, payout.fee_hold_id);
  if (row.transaction_id) await transactions.finishPending(trx, ctx, row.transaction_id, 'failed');
  return repo.moveTransfer(trx, ctx, row.id, ['pending', 'processing'], { status, failure_reason: reason });
}

/**
 * A return after completion: a new reversing transaction gives the principal back to the source
 * account (through the FX position at the locked rate for international payouts). The fee was
 * earned when the rail accepted the payout and is not refunded.
 */
async function reverse(trx: Queryable, ctx: Scope, row: repo.TransferRow, reason: string) {
  const legs: ledger.Leg[] = [{ accountId: row.source_id, amount: row.amount, currency: row.currency }];
  if (row.rate && row.local_amount !== null && row.local_currency) {
    const localSettlement = await ledger.systemAccount(trx, ctx, 'settlement', row.local_currency);
    const localPosition = await ledger.systemAccount(trx, ctx, 'fx_position', row.local_currency);
    legs.push(
      { accountId: localSettlement, amount: -row.local_amount, currency: row.local_currency },
      { accountId: localPosition, amount: row.local_amount, currency: row.local_currency },
      { accountId: payoutOf(row).principal_account_id, amount: -row.amount, currency: row.currency },
    );
  } else {
    legs.push({ accountId: payoutOf(row).principal_account_id, amount: -row.amount, currency: row.currency });
  }
  const posting = await ledger.post(trx, ctx, {
    kind: 'payout_return',
    reference: row.id,
    metadata: { transfer_id: row.id, reason },
    legs,
  });
  await transactions.recordMovement(trx, ctx, {
    reference: row.id,
    clientReference: row.client_reference,
    posting,
    sides: [
      {
        accountId: row.source_id,
        customerId: row.customer_id,
        direction: 'in',
        amount: row.amount,
        currency: row.currency,
        channel: channelOf(row.rail as Rail),
        transactionType: 'credit',
        description: `Return of transfer ${row.id}: ${reason}`,
        receivingAccountId: row.source_id,
      },
    ],
  });
  return repo.moveTransfer(trx, ctx, row.id, ['completed'], { status: 'returned', failure_reason: reason });
}

const RAIL_FROM: Record<RailOutcome, PayoutState[]> = { settled: ['submitted'], failed: ['submitted'], returned: ['submitted', 'settled'] };

/**
 * Applies what the rail said about a payout, once. Called by the sandbox settlement job, the
 * simulation endpoints and the operator CLI, always inside one transaction with its event.
 */
export async function applyRailOutcome(trx: Queryable, ctx: Scope, transferId: string, outcome: RailOutcome, reason: string | null) {
  const row = await repo.findTransferForUpdate(trx, ctx, transferId);
  if (!row || row.destination_type !== 'external_account') throw notFound('Transfer');
  const allowed = { settled: ['processing'], failed: ['processing'], returned: ['processing', 'completed'] }[outcome];
  if (!allowed.includes(row.status)) throw invalidTransition(row.status, outcome);
  if (!(await rails.movePayout(trx, ctx, transferId, RAIL_FROM[outcome], outcome, reason))) throw invalidTransition(row.status, outcome);

  const why = reason ?? (outcome === 'failed' ? 'Rejected by the receiving institution' : 'Returned by the receiving institution');
  const moved =
    outcome === 'settled'
      ? await settle(trx, ctx, row)
      : outcome === 'failed'
        ? await release(trx, ctx, row, 'failed', why)
        : row.status === 'completed'
          ? await reverse(trx, ctx, row, why)
          : await release(trx, ctx, row, 'returned', why);
  if (!moved) throw invalidTransition(row.status, outcome);
  // A failed or returned payout no longer counts toward its customer's daily limit (as sentToday did).
  if (outcome !== 'settled') await refundSpend(trx, ctx, row.customer_id, row.currency, row.amount, row.created_at);
  const event =
    outcome === 'settled' ? 'transfer.status.completed' : outcome === 'failed' ? 'transfer.status.failed' : 'transfer.status.returned';
  const response = toTransferResponse(moved);
  await recordEvent(trx, ctx, event, response);
  return response;
}

/**
 * Simulations and the operator: a payout still `pending` is first handed to its rail (the
 * sandbox and manual connectors are DB-backed, so this stays in the one transaction).
 */
export async function forceRailOutcome(
  trx: Queryable,
  ctx: Scope,
  config: ConnectorConfig,
  transferId: string,
  outcome: RailOutcome,
  reason: string | null,
) {
  const row = await repo.findTransferForUpdate(trx, ctx, transferId);
  if (!row) throw notFound('Transfer');
  if (row.destination_type !== 'external_account')
    throw new AppError('invalid_state_transition', 'Only transfers to external accounts go through a rail');
  if (row.status === 'pending' && awaitsApproval(row)) {
    throw new AppError('invalid_state_transition', 'The transfer is waiting for approval; it goes to its rail only once approved');
  }
  if (row.status === 'pending') {
    await submit(trx, ctx, config, row);
    await markProcessing(trx, ctx, row);
  }
  return applyRailOutcome(trx, ctx, transferId, outcome, reason);
}

/** The sandbox settlement job: payouts whose delay has passed settle on their own. */
export async function settleDueSandboxPayouts(db: Db, batch = 20): Promise<boolean> {
  const due = await rails.claimDuePayouts(db, batch, 60);
  for (const p of due) {
    const ctx = { tenantId: p.tenant_id, environment: p.environment as Environment };
    await db.transaction().execute(async (trx) => {
      const row = await repo.findTransferForUpdate(trx, ctx, p.transfer_id);
      // Still pending here means dispatch has not recorded `processing` yet: the next claim retries.
      if (row?.status === 'processing') await applyRailOutcome(trx, ctx, p.transfer_id, 'settled', null);
    });
  }
  return due.length === batch;
}
