import type { Config } from '../../config.js';
import type { Db, Queryable, Trx } from '../../db/client.js';
import { inOneStatement } from '../../db/write-set.js';
import { keyedOnce } from '../../lib/memo.js';
import { groupByScope, scopeKey, type Environment, type Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { eachOnItsOwn } from '../../core/job.js';
import * as ledger from '../../ledger/index.js';
import { payoutConnector, type PayoutState, type Rail, type ScopedPayout } from '../../rails/index.js';
import * as rails from '../../rails/repo.js';
import * as transactions from '../transactions/service.js';
import { recordEvent, recordEvents } from '../webhooks/service.js';
import { invalidTransition } from './errors.js';
import { refundSpend } from './limits.js';
import type { PayoutMetadata } from './external.js';
import { toTransferResponse } from './format.js';
import { channelOf } from './payout-rules.js';
import * as repo from './repo.js';
import { REAL_TIME, type Timeline } from '../../core/clock.js';

/**
 * A payout's life after it was created `pending` with its funds held:
 *   pending -> processing (handed to the rail) -> completed (holds posted)
 *                                              -> failed (holds released)
 *   processing -> returned (holds released); completed -> returned (a reversing transaction).
 * Every step is a conditional update on the locked transfer row, so each outcome takes effect
 * exactly once however many workers, simulations or operators race for it.
 */

/** The business and environment a row belongs to (a transfer, a claimed rail payout). */
const scopeOfRow = (row: { tenant_id: string; environment: string }): Scope => ({
  tenantId: row.tenant_id,
  environment: row.environment as Environment,
});

export type RailOutcome = 'settled' | 'failed' | 'returned';
type ConnectorConfig = Pick<Config, 'SANDBOX_RAIL_DELAY_MS'>;

export function payoutOf(row: repo.TransferRow): PayoutMetadata {
  return (row.metadata as { payout: PayoutMetadata }).payout;
}

/** A payout above the business's approval threshold that nobody has approved yet (maker-checker). */
export const awaitsApproval = (row: repo.TransferRow) => payoutOf(row)?.approval === 'waiting_approval';

/** Pending payouts the dispatch job hands to their rails per pass. */
const DISPATCH_BATCH = 100;

/**
 * The dispatch job: hands pending payouts to their connectors (outside any transaction, as a real
 * connector calls a partner), then records `processing` for them all in one transaction: the
 * transfers locked in ascending id, and one statement that moves those still pending and records
 * their `transfer.status.processing` events. A pass costs the same few statements for one payout
 * or a hundred. Submitting twice is harmless (connectors are idempotent per transfer), so a
 * payout that is no longer pending once locked is simply left. Should the batch fail, its
 * payouts are handed over one by one (the first failure rethrown), so one payout never holds
 * back the others.
 */
export async function dispatchPendingPayouts(db: Db, config: ConnectorConfig, batch = DISPATCH_BATCH): Promise<boolean> {
  const pending = await repo.pendingPayouts(db, batch);
  if (pending.length === 0) return false;
  const dispatch = async (rows: repo.TransferRow[]) => {
    for (const environment of new Set(rows.map((row) => row.environment as Environment))) {
      const own = rows.filter((row) => row.environment === environment);
      await payoutConnector(environment, config).submit(db, own.map(instructionOf));
    }
    await db.transaction().execute((trx) => markProcessing(trx, rows));
  };
  try {
    await dispatch(pending);
  } catch {
    await eachOnItsOwn(pending, (row) => dispatch([row]));
  }
  return pending.length === batch;
}

/** Records that `rows` were handed to their rail: those still pending (locked here) move to `processing`, with their events. */
async function markProcessing(trx: Queryable, rows: repo.TransferRow[]) {
  const locked = await repo.lockTransfers(
    trx,
    rows.map((row) => row.id),
  );
  const moving = locked.filter((row) => row.status === 'pending' && !awaitsApproval(row));
  if (moving.length === 0) return;
  // The rows and their events carry the same time.
  const at = new Date();
  await inOneStatement(trx, async (set) => {
    await repo.markProcessing(set, moving, at);
    await recordEvents(
      set,
      moving.map((row) => ({
        ctx: scopeOfRow(row),
        eventType: 'transfer.status.processing' as const,
        data: toTransferResponse({ ...row, status: 'processing', updated_at: at }),
      })),
    );
  });
}

/** What the rail is asked to pay for a payout (in the payee's currency for an international one). */
function instructionOf(row: repo.TransferRow): ScopedPayout {
  return {
    scope: scopeOfRow(row),
    payout: {
      transferId: row.id,
      rail: row.rail as Rail,
      amount: row.local_amount ?? row.amount,
      currency: row.local_currency ?? row.currency,
      payee: payoutOf(row).payee,
    },
  };
}

/** An international payout: its rail is paid in another currency, through the FX positions. */
const hasFxLeg = (row: repo.TransferRow) => Boolean(row.rate && row.local_amount !== null && row.local_currency);

/** The FX leg of a completed international payout: the local currency leaves the FX position for the rail's settlement account. */
function fxLeg(row: repo.TransferRow, position: string, settlement: string): ledger.PostingInput {
  const payout = payoutOf(row);
  return {
    kind: 'payout_fx',
    reference: row.id,
    metadata: {
      rate: row.rate,
      mid_rate: payout.mid_rate,
      spread_bps: payout.spread_bps,
      source_amount: String(row.amount),
      source_currency: row.currency,
    },
    legs: [
      { accountId: position, amount: -row.local_amount!, currency: row.local_currency! },
      { accountId: settlement, amount: row.local_amount!, currency: row.local_currency! },
    ],
  };
}

/** The holds a payout took: its principal, and its fee when it pays one. */
function holdIdsOf(row: repo.TransferRow): string[] {
  const fee = payoutOf(row).fee_hold_id;
  return fee ? [row.hold_id!, fee] : [row.hold_id!];
}

/** The source account's side of a completed payout, and of the FX leg when there is one. */
async function settle(trx: Queryable, ctx: Scope, row: repo.TransferRow) {
  const postings: ledger.PostedTransaction[] = [];
  for (const id of holdIdsOf(row)) postings.push((await ledger.postHold(trx, ctx, id)).transaction);
  if (hasFxLeg(row)) {
    const position = await ledger.systemAccount(trx, ctx, 'fx_position', row.local_currency!);
    const settlement = await ledger.systemAccount(trx, ctx, 'settlement', row.local_currency!);
    await ledger.post(trx, ctx, fxLeg(row, position, settlement));
  }
  if (row.transaction_id) await transactions.finishPending(trx, ctx, row.transaction_id, 'completed', postings);
  return repo.moveTransfer(trx, ctx, row.id, ['processing'], { status: 'completed', ledger_transaction_id: postings[0]!.id });
}

export async function release(trx: Queryable, ctx: Scope, row: repo.TransferRow, status: 'failed' | 'returned', reason: string) {
  for (const id of holdIdsOf(row)) await ledger.voidHold(trx, ctx, id);
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
  if (hasFxLeg(row)) {
    const localSettlement = await ledger.systemAccount(trx, ctx, 'settlement', row.local_currency!);
    const localPosition = await ledger.systemAccount(trx, ctx, 'fx_position', row.local_currency!);
    legs.push(
      { accountId: localSettlement, amount: -row.local_amount!, currency: row.local_currency! },
      { accountId: localPosition, amount: row.local_amount!, currency: row.local_currency! },
      { accountId: payoutOf(row).principal_account_id, amount: -row.amount, currency: row.currency },
    );
  } else {
    legs.push({ accountId: payoutOf(row).principal_account_id, amount: -row.amount, currency: row.currency });
  }
  const posting = await ledger.post(trx, ctx, {
    kind: 'payout_return',
    reference: row.id,
    metadata: { reason },
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
  // A failed or returned payout does not count toward its customer's daily limit.
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
  transferId: string,
  outcome: RailOutcome,
  reason: string | null,
  config: ConnectorConfig,
) {
  const row = await repo.findTransferForUpdate(trx, ctx, transferId);
  if (!row) throw notFound('Transfer');
  if (row.destination_type !== 'external_account')
    throw new AppError('invalid_state_transition', 'Only transfers to external accounts go through a rail');
  if (row.status === 'pending' && awaitsApproval(row)) {
    throw new AppError('invalid_state_transition', 'The transfer is waiting for approval; it goes to its rail only once approved');
  }
  if (row.status === 'pending') {
    await payoutConnector(ctx.environment, config).submit(trx, [instructionOf(row)]);
    await markProcessing(trx, [row]);
  }
  return applyRailOutcome(trx, ctx, transferId, outcome, reason);
}

/** A due sandbox payout, as rails.claimDuePayouts claims it. */
export interface DuePayout {
  tenant_id: string;
  environment: string;
  transfer_id: string;
}

/**
 * Settles due payouts together, in ONE transaction whatever their number (docs/money-path.md),
 * each as applyRailOutcome settles one: the transfers locked (ascending id), their rail payouts
 * moved to `settled`, their holds locked, the FX accounts of international ones found, every
 * balance row locked in one statement; in memory each payout's holds are posted (ledger
 * PostingBatch.postHolds) with its FX leg; then one statement writes balances, holds, ledger
 * rows, the account transactions completed, the transfers completed and their
 * `transfer.status.completed` events. Lock order: transfers → rail payouts → holds → balance
 * rows, as alone. A payout still `pending` (dispatch has not recorded `processing` yet) is left
 * for the next claim, as alone. What a lone settlement would refuse (its rail payout not
 * `submitted`, a hold not pending) fails the whole batch: the caller then settles its payouts
 * one by one. Returns the ids of the payouts it completed.
 */
export async function settlePayouts(trx: Trx, due: DuePayout[]): Promise<string[]> {
  const claimed = new Map(due.map((d) => [d.transfer_id, scopeKey(scopeOfRow(d))]));
  const rows = (await repo.lockTransfers(trx, [...claimed.keys()])).filter((row) => row.status === 'processing');
  const stranger = rows.find((row) => claimed.get(row.id) !== scopeKey(scopeOfRow(row)) || row.destination_type !== 'external_account');
  if (stranger) throw new ledger.LedgerInvariantError(`transfer ${stranger.id} is not the payout claimed`);
  if (rows.length === 0) return [];
  const moved = await rails.settlePayouts(
    trx,
    rows.map((row) => ({ scope: scopeOfRow(row), transferId: row.id })),
  );
  const stuck = rows.find((row) => !moved.has(row.id));
  if (stuck) throw invalidTransition(stuck.status, 'settled');
  const holds = new Map<string, ledger.Hold>();
  for (const { ctx, values } of groupByScope(rows.map((row) => ({ ctx: scopeOfRow(row), values: holdIdsOf(row) })))) {
    for (const [id, hold] of await ledger.lockPendingHolds(trx, ctx, values)) holds.set(id, hold);
  }
  const systemAccount = keyedOnce<string>();
  const fxAccounts = new Map<string, { position: string; settlement: string }>();
  for (const row of rows.filter(hasFxLeg)) {
    const ctx = scopeOfRow(row);
    const of = (role: 'fx_position' | 'settlement') =>
      systemAccount(`${scopeKey(ctx)}:${role}:${row.local_currency}`, () => ledger.systemAccount(trx, ctx, role, row.local_currency!));
    fxAccounts.set(row.id, { position: await of('fx_position'), settlement: await of('settlement') });
  }
  const book = await ledger.PostingBatch.open(trx, [
    ...[...holds.values()].flatMap((h) => [h.debitAccountId, h.creditAccountId]),
    ...[...fxAccounts.values()].flatMap((a) => [a.position, a.settlement]),
  ]);
  const settled = rows.map((row) => {
    const ctx = scopeOfRow(row);
    const own = holdIdsOf(row).map((id) => holds.get(id) ?? missingHold(row, id));
    const postings = book.postHolds(ctx, own);
    const fx = fxAccounts.get(row.id);
    // The FX accounts are system accounts that may go negative: this is never refused.
    if (fx && !book.tryPost(ctx, fxLeg(row, fx.position, fx.settlement)).ok)
      throw new ledger.LedgerInvariantError(`the FX leg of ${row.id}`);
    return { row, postings };
  });
  await writeSettled(trx, book, settled);
  return rows.map((row) => row.id);
}

/** The writes of settled payouts, as one statement: ledger, account transactions, transfers completed, their events. */
async function writeSettled(
  trx: Trx,
  book: ledger.PostingBatch,
  settled: { row: repo.TransferRow; postings: ledger.PostedTransaction[] }[],
) {
  await inOneStatement(trx, async (set) => {
    await book.flush(set);
    await transactions.completePending(
      trx,
      set,
      settled.flatMap(({ row, postings }) => (row.transaction_id ? [{ ctx: scopeOfRow(row), id: row.transaction_id, postings }] : [])),
    );
    const completed = settled.map(({ row, postings }) => ({
      ...row,
      status: 'completed' as const,
      ledger_transaction_id: postings[0]!.id,
    }));
    await repo.completePayouts(set, completed);
    // Each event carries the transfer as the database now holds it (stamped with the transaction's now()).
    await recordEvents(
      set,
      completed.map((row) => ({
        ctx: scopeOfRow(row),
        eventType: 'transfer.status.completed' as const,
        data: toTransferResponse({ ...row, updated_at: book.now }),
      })),
    );
  });
}

function missingHold(row: repo.TransferRow, id: string): never {
  throw new ledger.LedgerInvariantError(`hold ${id} of payout ${row.id} is not pending`);
}

/** One due payout in its own transaction, as before the batch (and when a batch fails). */
async function settleAlone(db: Db, p: DuePayout): Promise<void> {
  const ctx = scopeOfRow(p);
  await db.transaction().execute(async (trx) => {
    const row = await repo.findTransferForUpdate(trx, ctx, p.transfer_id);
    // Still pending here means dispatch has not recorded `processing` yet: the next claim retries.
    if (row?.status === 'processing') await applyRailOutcome(trx, ctx, p.transfer_id, 'settled', null);
  });
}

/** Due sandbox payouts claimed per pass of the settlement job, and so the most one batch settles. */
const SANDBOX_SETTLEMENT_BATCH = 100;

/**
 * The sandbox settlement job: payouts whose delay has passed settle on their own, together
 * (settlePayouts). Should the batch fail (a deadlock, a payout in a state it should not be in),
 * its payouts are settled one by one instead, so one payout's trouble never holds back the
 * others; the first failure is rethrown (the worker logs it).
 */
export async function settleDueSandboxPayouts(db: Db, batch = SANDBOX_SETTLEMENT_BATCH, t: Timeline = REAL_TIME): Promise<boolean> {
  const due = await rails.claimDuePayouts(db, batch, 60, t);
  if (due.length === 0) return false;
  try {
    await db.transaction().execute((trx) => settlePayouts(trx, due));
  } catch {
    await eachOnItsOwn(due, (p) => settleAlone(db, p));
  }
  return due.length === batch;
}
