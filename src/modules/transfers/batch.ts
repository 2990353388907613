import type { Trx } from '../../db/client.js';
import type { WriteSet } from '../../db/write-set.js';
import { AppError, refusalOf } from '../../core/errors.js';
import { scopeKey } from '../../core/context.js';
import { newId } from '../../lib/ids.js';
import type { Hold, LockedAhead, PostedTransaction, PostingBatch } from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import { refusalError } from './errors.js';
import { toTransferResponse } from './format.js';
import { fundingEvent, fundingMovement, fundingRow, isCardFunding, prepareFunding } from './card.js';
import { isPayout, payoutHolds, payoutMovement, payoutRow, preparePayout, requestPayoutApproval } from './external.js';
import { checkShape, legsOf, movementOf, prepare, transferRow, type MovementRequest, type Prepared } from './internal.js';
import { SpendingGate } from './limits.js';
import * as repo from './repo.js';
import type { TransferResponse } from './schema.js';

// The steps of the batch path after its first locks (pipeline.ts calls them in order): shape,
// load, limits, fee accounts, balances, decide, post, record. Only decide runs without SQL.

/**
 * Each request's own outcome: its transfer (the row, and its answer: the same object its event
 * carries, made once, and that event's id), or the error it alone gets.
 */
export type TransferOutcome = ({ ok: true } & Recorded) | { ok: false; error: AppError };
/** A transfer recorded: its row, its answer, and the id of its event, whose data is the answer. */
export type Recorded = { row: repo.TransferRow; response: TransferResponse; eventId: string };

/** A movement the batch accepted: its posting, or a payout's holds. */
export type Accepted = { i: number; p: Prepared } & ({ posting: PostedTransaction; holds?: never } | { holds: Hold[]; posting?: never });

/** A request that passed its checks, with its index in the batch. */
export type Loaded = { i: number; p: Prepared };
/** What `refuse` does with request `i`'s error: it becomes that request's outcome. */
export type Refuse = (i: number, error: AppError) => void;
type FeeAccounts = Awaited<ReturnType<typeof attachFeeAccounts>>;

/** The check of each kind (404, 409, 422 that need no balance), against the share-locked account rows. */
const CHECKS = { card: prepareFunding, external_account: preparePayout } as Record<string, typeof prepare | undefined>;

/**
 * The business's fee account per business and currency that charges a fee, or the id reserved
 * for its first one (accounts.batchFeeAccounts: created only if an accepted movement pays a fee).
 */
export async function attachFeeAccounts(trx: Trx, prepared: Prepared[]) {
  const feeAccounts = accounts.batchFeeAccounts(trx);
  for (const p of prepared) {
    if (p.fee === 0n) continue;
    p.feeAccount = await feeAccounts.of(p.req.ctx, p.currency);
    // The business paying out from its own fee account owes itself nothing (a hold needs two accounts).
    if (isPayout(p) && p.feeAccount.id === p.source.id) {
      p.fee = 0n;
      p.feeAccount = undefined;
    }
  }
  return feeAccounts;
}

/** The ledger accounts whose balances a movement changes: source, where the amount goes, fee account. */
function ledgerAccountsOf(p: Prepared): string[] {
  return [p.source.id, isPayout(p) ? p.principalAccountId : p.destination.id, ...(p.feeAccount ? [p.feeAccount.id] : [])];
}

/** Posts a movement, or holds a payout's funds, in memory: its result, or the ledger's typed refusal. */
function postOrHold(book: PostingBatch, p: Prepared) {
  if (isPayout(p)) return book.tryHolds(p.req.ctx, payoutHolds(p));
  return book.tryPost(p.req.ctx, {
    kind: p.kind,
    // The reference names the transfer; the metadata carries only what it does not say.
    reference: p.id,
    ...(isCardFunding(p) ? { metadata: { card_id: p.card.id } } : {}),
    legs: legsOf(p),
  });
}

/** Decides each movement in arrival order against the locked balances and counters (no SQL). */
export function decide(prepared: Prepared[], book: PostingBatch, gate: SpendingGate): (AppError | Omit<Accepted, 'i'>)[] {
  return prepared.map((p) => {
    const customerId = p.source.customer_id;
    // Card funding has no KYC limit of its own; it only counts in the customer's daily total.
    if (customerId !== null && !isCardFunding(p)) {
      const refusal = gate.check(p.req.ctx, customerId, p.currency, p.amount);
      if (refusal) return refusal;
    }
    const result = postOrHold(book, p);
    if (!result.ok) return refusalError(result);
    if (customerId !== null) gate.add(p.req.ctx, customerId, p.currency, p.amount);
    return 'holds' in result ? { p, holds: result.holds } : { p, posting: result.posting };
  });
}

/** Shape: the requests checkShape lets through (their indexes); the others are refused. */
export async function shape(reqs: MovementRequest[], refuse: Refuse): Promise<number[]> {
  const shaped = await Promise.all(reqs.map((r) => refusalOf(() => checkShape(r.body))));
  shaped.forEach((s, i) => s instanceof AppError && refuse(i, s));
  return reqs.flatMap((_, i) => (shaped[i] instanceof AppError ? [] : [i]));
}

/** Load: each request's checks of its kind (404, 409, 422 that need no balance), against the locked account rows. */
export async function load(
  trx: Trx,
  reqs: MovementRequest[],
  live: number[],
  locked: accounts.LockedAccounts,
  refuse: Refuse,
): Promise<Loaded[]> {
  const prepared: Loaded[] = [];
  for (const i of live) {
    const req = reqs[i]!;
    const check = CHECKS[req.body.destination.destination_type] ?? prepare;
    const p = await refusalOf(() => check(trx, req, newId(), locked.get(scopeKey(req.ctx))!));
    if (p instanceof AppError) refuse(i, p);
    else prepared.push({ i, p });
  }
  return prepared;
}

/** Limits: the spending gate of every customer who sends (their KYC levels, spending locks and counters). */
export function openGate(trx: Trx, prepared: Loaded[], config: MovementRequest['config']): Promise<SpendingGate> {
  const senders = prepared.flatMap(({ p }) =>
    p.source.customer_id ? [{ ctx: p.req.ctx, customerId: p.source.customer_id, currency: p.currency }] : [],
  );
  return SpendingGate.open(trx, config, senders);
}

/** The movements `decide` accepted, with their request's index; the refused ones get their error. */
export function accept(prepared: Loaded[], decided: ReturnType<typeof decide>, refuse: Refuse): Accepted[] {
  const accepted: Accepted[] = [];
  decided.forEach((d, k) => {
    const i = prepared[k]!.i;
    if (d instanceof AppError) refuse(i, d);
    else accepted.push({ i, ...d } as Accepted);
  });
  return accepted;
}

/** The account transactions of a movement, by kind. */
function movementRecord({ p, posting }: Accepted): transactions.MovementRecord {
  if (isPayout(p)) return payoutMovement(p);
  return isCardFunding(p) ? fundingMovement(p, posting!) : movementOf(p, posting!);
}

/** The transfer row of a movement, by kind (`transactionId`: its source account's transaction). */
function rowOf({ p, posting, holds }: Accepted, transactionId: string): repo.TransferRow {
  if (isPayout(p)) return payoutRow(p, holds!, transactionId);
  return isCardFunding(p) ? fundingRow(p, posting!, transactionId) : transferRow(p, posting!, transactionId);
}

/** Balances: the balance rows of every ledger account the movements change, locked (or locked ahead) as a working copy. */
export function openBalances(feeAccounts: FeeAccounts, loaded: Loaded[], ahead?: LockedAhead): Promise<PostingBatch> {
  return feeAccounts.openBook(
    loaded.flatMap(({ p }) => ledgerAccountsOf(p)),
    [],
    ahead,
  );
}

/**
 * Post: the ledger postings and holds decided in memory, and the spending counters. A reserved
 * fee account an accepted movement pays into is created first (before the write statement that
 * adds its fee).
 */
export async function post(writes: WriteSet, feeAccounts: FeeAccounts, book: PostingBatch, gate: SpendingGate): Promise<void> {
  await feeAccounts.createUsed(book);
  await book.flush(writes);
  await gate.flush(writes);
}

/**
 * Record: the account transactions, transfers and events of every accepted movement; a payout
 * that waits for a checker gets its approval request. Its transfer rows with their answers, in order.
 */
export async function record(writes: WriteSet, accepted: Accepted[]): Promise<Recorded[]> {
  if (accepted.length === 0) return [];
  const txs = await transactions.recordMovements(
    writes,
    accepted.map((a) => ({ ctx: a.p.req.ctx, movement: movementRecord(a) })),
  );
  const rows = accepted.map((a, k) => rowOf(a, txs[k]![0]!.id));
  const responses = rows.map(toTransferResponse);
  await repo.insertTransfers(writes, rows);
  const events = await recordEvents(
    writes,
    accepted.flatMap(({ p }, k) => [
      {
        ctx: p.req.ctx,
        eventType: isPayout(p) ? ('transfer.status.pending' as const) : ('transfer.status.completed' as const),
        data: responses[k]!,
      },
      ...(isCardFunding(p)
        ? [{ ctx: p.req.ctx, eventType: 'cards.transaction.funding' as const, data: fundingEvent(p, txs[k]![1]!), groupId: p.card.id }]
        : []),
    ]),
  );
  for (const { p } of accepted) if (isPayout(p)) await requestPayoutApproval(writes.db, p);
  // One transfer event a movement, in order (a card funding's own event is a cards one).
  const own = events.filter((e) => e.event_type.startsWith('transfer.'));
  return rows.map((row, k) => ({ row, response: responses[k]!, eventId: own[k]!.event_id }));
}
