import { sql } from 'kysely';
import { expect } from 'vitest';
import type { Db } from '../src/db/client.js';
import { balanceLockOf } from '../src/ledger/repo.js';

/**
 * Holds one account's ledger balance row (its lock: src/ledger/repo.ts balanceLockOf) in a
 * transaction of its own, until the returned function lets it go and that transaction ends: a
 * batch moving money from the account then waits on the row with its own locks held (PostgreSQL
 * tests of what queues behind a held row: spare lanes, Idempotency-Key locks). Letting go twice is
 * harmless.
 */
export async function holdBalanceRow(db: Db, accountId: string): Promise<() => Promise<void>> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = db.transaction().execute(async (trx) => {
    await balanceLockOf(accountId).execute(trx);
    locked();
    await released;
  });
  await isLocked;
  return async () => {
    release();
    await holder;
  };
}

/** Until at least `n` lock requests of sessions of this database wait (not granted). */
export async function waitersAtLeast(db: Db, n: number): Promise<void> {
  for (;;) {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_locks l join pg_stat_activity a on a.pid = l.pid
      where a.datname = current_database() and not l.granted`.execute(db);
    if (rows[0]!.n >= n) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Expects `beside` answered (200) within `ms`: in the tests of spare lanes (db/batcher.ts), while
 * the row a stalled batch waits on is still held.
 */
export async function answeredWithin(beside: Promise<{ status: number }>, ms: number): Promise<void> {
  const first = await Promise.race([beside.then(() => 'beside' as const), new Promise((r) => setTimeout(r, ms, 'timeout'))]);
  expect(first).toBe('beside');
  expect((await beside).status).toBe(200);
}

/**
 * A spare lane beside a stalled batch (db/batcher.ts): with `held`'s balance row held, sends
 * `stalled` (its batch waits on that row, holding the rows it locked before it), then `behind`
 * (it names one of those rows), then, long past the stall, `beside` (it names none of them).
 * `beside` must be answered while the row is still held, `behind` must not; once the row is let
 * go, `stalled` and `behind` are answered (200). Their answers, for the caller's balance checks.
 */
export async function besideAStalledBatch<R extends { status: number; text?: string }>(
  db: Db,
  held: string,
  send: { stalled: () => Promise<R>; behind: () => Promise<R>; beside: () => Promise<R> },
): Promise<{ stalled: R; behind: R }> {
  const release = await holdBalanceRow(db, held);
  try {
    const stalled = send.stalled();
    await waitersAtLeast(db, 1);
    const behind = send.behind();
    let behindDone = false;
    void behind.then(() => (behindDone = true));
    // Long past the stall: a spare lane taking the queue in arrival order has taken `behind` by now.
    await new Promise((r) => setTimeout(r, 200));
    await answeredWithin(send.beside(), 5_000);
    expect(behindDone).toBe(false);
    await release();
    const answers = { stalled: await stalled, behind: await behind };
    for (const res of Object.values(answers)) expect(res.status, res.text).toBe(200);
    return answers;
  } finally {
    await release();
  }
}
