import { sql } from 'kysely';
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
