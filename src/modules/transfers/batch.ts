import type { Trx } from '../../db/client.js';
import { pipelined, type LockPlan } from '../../db/pipeline.js';
import { inOneStatement, type WriteSet } from '../../db/write-set.js';
import { AppError, refusalOf } from '../../core/errors.js';
import { scopeKey, soleScope } from '../../core/context.js';
import { newId } from '../../lib/ids.js';
import { balanceLockAhead, lockBalances, PostingBatch, type Hold, type LockedAhead, type PostedTransaction } from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import { refusalError } from './errors.js';
import { toTransferResponse } from './format.js';
import { fundingEvent, fundingMovement, fundingRow, isCardFunding, prepareFunding } from './card.js';
import { isPayout, payoutHolds, payoutMovement, payoutRow, preparePayout, requestPayoutApproval } from './external.js';
import {
  accountsNamed,
  checkShape,
  legsOf,
  knownSource,
  movementOf,
  prepare,
  transferRow,
  type MovementRequest,
  type Prepared,
} from './internal.js';
import { SpendingGate } from './limits.js';
import * as repo from './repo.js';

/** Each request's own outcome: its transfer, or the error it alone gets. */
export type TransferOutcome = { ok: true; row: repo.TransferRow } | { ok: false; error: AppError };

/** A movement the batch accepted: its posting, or a payout's holds. */
type Accepted = { i: number; p: Prepared } & ({ posting: PostedTransaction; holds?: never } | { holds: Hold[]; posting?: never });

/** The check of each kind (404, 409, 422 that need no balance), against the share-locked account rows. */
const CHECKS = { card: prepareFunding, external_account: preparePayout } as Record<string, typeof prepare | undefined>;

/** Share-locks every account the batch names, one statement per business (ascending id inside). */
const lockAccounts = (trx: Trx, reqs: MovementRequest[]) =>
  accounts.lockForMovements(
    trx,
    reqs.map((req) => ({ ctx: req.ctx, ids: accountsNamed(req.body) })),
  );

/** Whether a request passes checkShape: one it refuses locks nothing (its refusal is movementBatch's to report). */
function isShaped(req: MovementRequest): boolean {
  try {
    checkShape(req.body);
    return true;
  } catch (err) {
    if (err instanceof AppError) return false;
    throw err;
  }
}

/** The batch's first locks: the account rows by business, and what was locked with them (when known ahead). */
export interface FirstLocks {
  locked: Map<string, Map<string, accounts.AccountRow>>;
  ahead: { gate: SpendingGate; balances: LockedAhead } | undefined;
}

/**
 * The batch's first locks, when it knows before reading a row everything it locks after the
 * account rows (one business, internal transfers, no fee: `knownSource`): the statements, in the
 * lock order (the accounts, the senders' KYC levels, spending locks and counters, the balance
 * rows), and how to read their rows. Undefined otherwise: the gate, the fee accounts and the
 * balance rows then follow once the account rows are read. Requests refused by their shape lock
 * nothing. The caller sends the statements in one round trip, after whatever must come first (the
 * idempotency claim: http/idempotency-batch.ts).
 */
export function planFirstLocks(trx: Trx, all: MovementRequest[]): LockPlan<FirstLocks> | undefined {
  const reqs = all.filter(isShaped);
  const ctx = soleScope(reqs);
  const sources = reqs.map(knownSource).filter((source) => source !== undefined);
  if (!ctx || sources.length < reqs.length) return undefined;
  const senders = sources.flatMap((s) => (s.customerId ? [{ ctx, customerId: s.customerId, currency: s.currency }] : []));
  const gate = SpendingGate.plan(trx, reqs[0]!.config, senders);
  const ids = reqs.flatMap((req) => accountsNamed(req.body));
  const accountLock = accounts.lockForMovementStatement(trx, ctx, ids);
  const balances = balanceLockAhead(trx, ctx, ids);
  return {
    statements: [accountLock.statement, ...gate.statements, balances.statement],
    read: ([rows, ...after]) => {
      const balanceRows = after.pop() as LockedAhead['rows'];
      return {
        locked: new Map([[scopeKey(ctx), accountLock.read(rows!)]]),
        ahead: { gate: gate.open(after), balances: { ids: balances.ids, rows: balanceRows } },
      };
    },
  };
}

/** The batch's first locks (planFirstLocks), in one round trip when known ahead; else the account rows alone. */
async function lockFirst(trx: Trx, reqs: MovementRequest[]): Promise<FirstLocks> {
  const plan = planFirstLocks(trx, reqs);
  if (!plan) return { locked: await lockAccounts(trx, reqs), ahead: undefined };
  return plan.read(await pipelined(trx, ...plan.statements));
}

/**
 * Takes, before the first chunk of a bulk, every lock its chunks will take, in movementBatch's
 * order: account rows (share), spending locks, balance rows (with the fee accounts that exist),
 * each ascending. Each chunk then locks rows its transaction already holds, without waiting.
 * Locked chunk by chunk, a later chunk could wait for a lower row while holding a higher one from
 * an earlier chunk: two bulks over the same accounts deadlocked (a 503 once the retries ran out).
 */
export async function lockAhead(trx: Trx, reqs: MovementRequest[]): Promise<void> {
  const live = reqs.filter(isShaped);
  const locked = await lockAccounts(trx, live);
  const spending = live.flatMap((req) => {
    const customerId = locked.get(scopeKey(req.ctx))?.get(req.body.source.id)?.customer_id;
    return customerId ? [repo.spendingKey(req.ctx, customerId)] : [];
  });
  await repo.lockSpendingKeys(trx, spending);
  for (const [key, rows] of [...locked].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const ctx = live.find((req) => scopeKey(req.ctx) === key)!.ctx;
    const ids = [...rows.keys()];
    for (const currency of new Set([...rows.values()].map((r) => r.currency))) {
      const fees = await accounts.findBusinessFeeAccount(trx, ctx, currency);
      if (fees) ids.push(fees.id);
    }
    await lockBalances(trx, ctx, [...new Set(ids)]);
  }
}

/**
 * The business's fee account per business and currency that charges a fee, or the id reserved
 * for its first one (accounts.batchFeeAccounts: created only if an accepted movement pays a fee).
 */
async function attachFeeAccounts(trx: Trx, prepared: Prepared[]) {
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
    reference: p.id,
    metadata: isCardFunding(p) ? { transfer_id: p.id, card_id: p.card.id } : { transfer_id: p.id },
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

/**
 * Money movements (internal transfers, card fundings, payouts) as ONE unit of work in `trx`, with
 * a fixed number of statements whatever their number (docs/money-path.md). The steps, in order:
 * shape → lock (the account rows, or `first`: the first locks the caller took with its claim) →
 * load (each kind's checks) → limits (the spending gate) → fee accounts → balances → decide (in
 * memory, arrival order) → post and record (one write statement) → answer. Lock order: account
 * rows (share) → spending locks → (fee account creation, rare) → balance rows, each ascending: the
 * order of every other money movement. A refused movement changes nothing, so it never fails its
 * neighbours. Returns one outcome per request, in order. The writes go into `writes` when the
 * caller gives one (it sends them with its own, in one statement, before it commits); otherwise
 * they are sent here, as one statement.
 */
export async function movementBatch(trx: Trx, reqs: MovementRequest[], writes?: WriteSet, first?: FirstLocks): Promise<TransferOutcome[]> {
  const outcomes: (TransferOutcome | undefined)[] = reqs.map(() => undefined);
  const refuse = (i: number, error: AppError) => (outcomes[i] = { ok: false, error });

  const live = await shape(reqs, refuse);
  const { locked, ahead } =
    first ??
    (await lockFirst(
      trx,
      live.map((i) => reqs[i]!),
    ));
  const prepared = await load(trx, reqs, live, locked, refuse);
  const gate = ahead?.gate ?? (await openGate(trx, reqs[0]!.config, prepared));
  const feeAccounts = await attachFeeAccounts(
    trx,
    prepared.map((x) => x.p),
  );
  const book = await feeAccounts.openBook(
    prepared.flatMap(({ p }) => ledgerAccountsOf(p)),
    [],
    ahead?.balances,
  );
  const accepted = accept(
    prepared,
    decide(
      prepared.map((x) => x.p),
      book,
      gate,
    ),
    refuse,
  );
  // A reserved Fees account an accepted movement pays into exists before the writes add its fee.
  await feeAccounts.createUsed(book);
  const rows = await inOneStatement(writes ?? trx, (set) => record(set, book, gate, accepted));
  accepted.forEach((a, k) => (outcomes[a.i] = { ok: true, row: rows[k]! }));
  return outcomes.map((o) => o!);
}

/** Shape: the requests checkShape lets through (their indexes); the others are refused. */
async function shape(reqs: MovementRequest[], refuse: (i: number, error: AppError) => void): Promise<number[]> {
  const shaped = await Promise.all(reqs.map((r) => refusalOf(() => checkShape(r.body))));
  shaped.forEach((s, i) => s instanceof AppError && refuse(i, s));
  return reqs.flatMap((_, i) => (shaped[i] instanceof AppError ? [] : [i]));
}

/** Load: each request's checks of its kind (404, 409, 422 that need no balance), against the locked account rows. */
async function load(
  trx: Trx,
  reqs: MovementRequest[],
  live: number[],
  locked: FirstLocks['locked'],
  refuse: (i: number, error: AppError) => void,
): Promise<{ i: number; p: Prepared }[]> {
  const prepared: { i: number; p: Prepared }[] = [];
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
function openGate(trx: Trx, config: MovementRequest['config'], prepared: { p: Prepared }[]): Promise<SpendingGate> {
  const senders = prepared.flatMap(({ p }) =>
    p.source.customer_id ? [{ ctx: p.req.ctx, customerId: p.source.customer_id, currency: p.currency }] : [],
  );
  return SpendingGate.open(trx, config, senders);
}

/** The movements `decide` accepted, with their request's index; the refused ones get their error. */
function accept(
  prepared: { i: number; p: Prepared }[],
  decided: ReturnType<typeof decide>,
  refuse: (i: number, error: AppError) => void,
): Accepted[] {
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

/**
 * Adds the writes of every accepted movement: postings and holds, account transactions,
 * transfers, events, counters. A payout that waits for a checker gets its approval request.
 */
async function record(writes: WriteSet, book: PostingBatch, gate: SpendingGate, accepted: Accepted[]) {
  await book.flush(writes);
  await gate.flush(writes);
  if (accepted.length === 0) return [];
  const txs = await transactions.recordMovements(
    writes,
    accepted.map((a) => ({ ctx: a.p.req.ctx, movement: movementRecord(a) })),
  );
  const rows = accepted.map((a, k) => rowOf(a, txs[k]![0]!.id));
  await repo.insertTransfers(writes, rows);
  await recordEvents(
    writes,
    accepted.flatMap(({ p }, k) => [
      {
        ctx: p.req.ctx,
        eventType: isPayout(p) ? ('transfer.status.pending' as const) : ('transfer.status.completed' as const),
        data: toTransferResponse(rows[k]!),
      },
      ...(isCardFunding(p)
        ? [{ ctx: p.req.ctx, eventType: 'cards.transaction.funding' as const, data: fundingEvent(p, txs[k]![1]!), groupId: p.card.id }]
        : []),
    ]),
  );
  for (const { p } of accepted) if (isPayout(p)) await requestPayoutApproval(writes.db, p);
  return rows;
}
