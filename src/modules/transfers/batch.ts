import type { Trx } from '../../db/client.js';
import { inOneStatement, type WriteSet } from '../../db/write-set.js';
import { AppError } from '../../core/errors.js';
import { newId } from '../../lib/ids.js';
import { PostingBatch, type PostedTransaction } from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import { refusalError } from './errors.js';
import { toTransferResponse } from './format.js';
import { fundingEvent, fundingMovement, fundingRow, isCardFunding, prepareFunding } from './card.js';
import { accountsNamed, checkShape, legsOf, movementOf, prepare, transferRow, type MovementRequest, type Prepared } from './internal.js';
import { SpendingGate } from './limits.js';
import * as repo from './repo.js';

/** Each request's own outcome: its transfer, or the error it alone gets. */
export type TransferOutcome = { ok: true; row: repo.TransferRow } | { ok: false; error: AppError };

interface Accepted {
  i: number;
  p: Prepared;
  posting: PostedTransaction;
}

const scopeKey = (r: MovementRequest) => `${r.ctx.tenantId}:${r.ctx.environment}`;

/** Runs `fn`, turning a client error (AppError) into that item's outcome; anything else is a bug and propagates. */
async function settle<T>(fn: () => Promise<T> | T): Promise<T | AppError> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
}

/** Share-locks every account the batch names, one statement per business (ascending id inside). */
async function lockAccounts(trx: Trx, reqs: MovementRequest[]) {
  const byScope = new Map<string, { req: MovementRequest; ids: string[] }>();
  for (const req of reqs) {
    const entry = byScope.get(scopeKey(req)) ?? { req, ids: [] };
    entry.ids.push(...accountsNamed(req.body));
    byScope.set(scopeKey(req), entry);
  }
  const locked = new Map<string, Map<string, accounts.AccountRow>>();
  for (const [key, { req, ids }] of [...byScope].sort(([a], [b]) => (a < b ? -1 : 1))) {
    locked.set(key, await accounts.lockForMovement(trx, req.ctx, ids));
  }
  return locked;
}

/** The business's fee account per business and currency that charges a fee (created on demand). */
async function attachFeeAccounts(trx: Trx, prepared: Prepared[]) {
  const cache = new Map<string, accounts.AccountRow>();
  for (const p of prepared) {
    if (p.fee === 0n) continue;
    const key = `${scopeKey(p.req)}:${p.currency}`;
    if (!cache.has(key)) cache.set(key, await accounts.businessFeeAccount(trx, p.req.ctx, p.currency));
    p.feeAccount = cache.get(key);
  }
}

/** Decides each transfer in arrival order against the locked balances and counters (no SQL). */
function decide(prepared: Prepared[], book: PostingBatch, gate: SpendingGate) {
  return prepared.map((p) => {
    const customerId = p.source.customer_id;
    // Card funding has no KYC limit of its own; it only counts in the customer's daily total.
    if (customerId !== null && !isCardFunding(p)) {
      const refusal = gate.check(p.req.ctx, customerId, p.currency, p.amount);
      if (refusal) return refusal;
    }
    const result = book.tryPost(p.req.ctx, {
      kind: p.kind,
      reference: p.id,
      metadata: isCardFunding(p) ? { transfer_id: p.id, card_id: p.card.id } : { transfer_id: p.id },
      legs: legsOf(p),
    });
    if (!result.ok) return refusalError(result);
    if (customerId !== null) gate.add(p.req.ctx, customerId, p.currency, p.amount);
    return { p, posting: result.posting };
  });
}

/**
 * Movements that complete at once (internal transfers and card fundings) as ONE unit of work in
 * `trx`, with a fixed number of statements whatever their number (docs/money-path.md). Every
 * kind takes the same steps: load (lock the accounts) → check (per kind, then limits) → post
 * (balances decided in memory) → record (account transactions, transfer, events, counters). Lock order: account rows (share) → spending locks → (fee
 * account creation, rare) → balance rows, each ascending — the order of every other money movement. Every check is made
 * per transfer in arrival order; a refused transfer changes nothing, so it never fails its
 * neighbours. Returns one outcome per request, in order. The writes go into `writes` when the
 * caller gives one (it sends them with its own, in one statement, before it commits); otherwise
 * they are sent here, as one statement.
 */
export async function movementBatch(trx: Trx, reqs: MovementRequest[], writes?: WriteSet): Promise<TransferOutcome[]> {
  const outcomes: (TransferOutcome | undefined)[] = reqs.map(() => undefined);
  const shaped = await Promise.all(reqs.map((r) => settle(() => checkShape(r.body))));
  const live = reqs.flatMap((r, i) => (shaped[i] instanceof AppError ? [] : [i]));
  shaped.forEach((s, i) => s instanceof AppError && (outcomes[i] = { ok: false, error: s }));

  const locked = await lockAccounts(
    trx,
    live.map((i) => reqs[i]!),
  );
  const prepared: { i: number; p: Prepared }[] = [];
  for (const i of live) {
    const req = reqs[i]!;
    const check = req.body.destination.destination_type === 'card' ? prepareFunding : prepare;
    const p = await settle(() => check(trx, req, newId(), locked.get(scopeKey(req))!));
    if (p instanceof AppError) outcomes[i] = { ok: false, error: p };
    else prepared.push({ i, p });
  }
  const senders = prepared.flatMap(({ p }) =>
    p.source.customer_id ? [{ ctx: p.req.ctx, customerId: p.source.customer_id, currency: p.currency }] : [],
  );
  const gate = await SpendingGate.open(trx, reqs[0]!.config, senders);
  // After the spending locks, as a lone payout does (its fee account comes after its limits).
  await attachFeeAccounts(
    trx,
    prepared.map((x) => x.p),
  );
  const book = await PostingBatch.open(
    trx,
    prepared.flatMap(({ p }) => [p.source.id, p.destination.id, ...(p.feeAccount ? [p.feeAccount.id] : [])]),
  );

  const decided = decide(
    prepared.map((x) => x.p),
    book,
    gate,
  );
  const accepted: Accepted[] = [];
  decided.forEach((d, k) => {
    const i = prepared[k]!.i;
    if (d instanceof AppError) outcomes[i] = { ok: false, error: d };
    else accepted.push({ i, p: d.p, posting: d.posting });
  });
  const rows = await inOneStatement(writes ?? trx, (set) => record(set, book, gate, accepted));
  accepted.forEach((a, k) => (outcomes[a.i] = { ok: true, row: rows[k]! }));
  return outcomes.map((o) => o!);
}

/** Adds the writes of every accepted movement: postings, account transactions, transfers, events, counters. */
async function record(writes: WriteSet, book: PostingBatch, gate: SpendingGate, accepted: Accepted[]) {
  await book.flush(writes);
  await gate.flush(writes);
  if (accepted.length === 0) return [];
  const txs = await transactions.recordMovements(
    writes,
    accepted.map(({ p, posting }) => ({
      ctx: p.req.ctx,
      movement: isCardFunding(p) ? fundingMovement(p, posting) : movementOf(p, posting),
    })),
  );
  const rows = accepted.map(({ p, posting }, k) =>
    isCardFunding(p) ? fundingRow(p, posting, txs[k]![0]!.id) : transferRow(p, posting, txs[k]![0]!.id),
  );
  await repo.insertTransfers(writes, rows);
  await recordEvents(
    writes,
    accepted.flatMap(({ p }, k) => [
      { ctx: p.req.ctx, eventType: 'transfer.status.completed' as const, data: toTransferResponse(rows[k]!) },
      ...(isCardFunding(p)
        ? [{ ctx: p.req.ctx, eventType: 'cards.transaction.funding' as const, data: fundingEvent(p, txs[k]![1]!), groupId: p.card.id }]
        : []),
    ]),
  );
  return rows;
}
