import type { Trx } from '../../db/client.js';
import type { KeyedBatch } from '../../db/pipeline.js';
import { inOneStatement, type WriteSet } from '../../db/write-set.js';
import type { ItemOutcome } from '../../core/errors.js';
import * as batch from './batch.js';
import type { MovementRequest } from './internal.js';
import { lock, lockPlan, type FirstLocks } from './locks.js';
import type { TransferResponse } from './schema.js';

/**
 * POST /v1/transfer(s), one gathered batch of money movements from accounts (internal transfers,
 * card fundings, payouts, in arrival order) in one transaction (docs/money-path.md): claim every
 * Idempotency-Key with the first locks behind it, in one round trip; then the movements; then
 * each claimed request's answer, which the idempotency layer stores and sends after the commit.
 */
export async function movementPipeline(keyed: KeyedBatch<MovementRequest, TransferResponse>): Promise<void> {
  const { claimed, first } = await keyed.claim(lockPlan(keyed.trx, keyed.inputs));
  const outcomes = claimed.length > 0 ? await moveLocked(keyed.trx, claimed, first, keyed.writes) : [];
  keyed.answer(outcomes.map(answer));
}

/**
 * Movements outside a gathered batch (a payout made for another module, a bulk's chunk): lock,
 * then the same steps. Their writes are sent here as one statement, or go into `writes`.
 */
export async function movementBatch(trx: Trx, reqs: MovementRequest[], writes?: WriteSet): Promise<batch.TransferOutcome[]> {
  return moveLocked(trx, reqs, await lock(trx, reqs), writes);
}

/** Answer: a movement's outcome as its request's answer. */
export function answer(outcome: batch.TransferOutcome): ItemOutcome<TransferResponse> {
  return outcome.ok ? { ok: true, data: outcome.response, eventId: outcome.eventId } : outcome;
}

/**
 * The steps after the first locks, in order: shape, load (each kind's checks), limits (the
 * spending gate), fee accounts, balances, decide (in memory, arrival order), post and record (one
 * write statement). Lock order: account rows (share) → spending locks → (fee account creation,
 * rare) → balance rows, each ascending: the order of every other money movement. (A batch locked
 * ahead takes no account row lock: it reads them under its balance locks, locks.ts lockedAhead.) A refused
 * movement changes nothing, so it never fails its neighbours. One outcome per request, in order.
 */
async function moveLocked(trx: Trx, reqs: MovementRequest[], locks: FirstLocks, writes?: WriteSet): Promise<batch.TransferOutcome[]> {
  const outcomes: (batch.TransferOutcome | undefined)[] = reqs.map(() => undefined);
  const refuse: batch.Refuse = (i, error) => (outcomes[i] = { ok: false, error });

  const live = await batch.shape(reqs, refuse);
  const loaded = await batch.load(trx, reqs, live, locks.locked, refuse);
  const gate = locks.ahead?.gate ?? (await batch.openGate(trx, loaded, reqs[0]!.config));
  const feeAccounts = await batch.attachFeeAccounts(
    trx,
    loaded.map((x) => x.p),
  );
  const book = await batch.openBalances(feeAccounts, loaded, locks.ahead?.balances);
  const decided = batch.decide(
    loaded.map((x) => x.p),
    book,
    gate,
  );
  const accepted = batch.accept(loaded, decided, refuse);
  const recorded = await inOneStatement(writes ?? trx, async (set) => {
    await batch.post(set, feeAccounts, book, gate);
    return batch.record(set, accepted);
  });
  accepted.forEach((a, k) => {
    outcomes[a.i] = { ok: true, ...recorded[k]! };
  });
  return outcomes.map((o) => o!);
}
