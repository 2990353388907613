import { sql, type OperationNodeSource } from 'kysely';
import type { Queryable } from './client.js';

/** One INSERT, UPDATE or DELETE (a Kysely query builder or a `sql` template), without a WITH of its own. */
export type WritePart = OperationNodeSource & { execute(db: Queryable): Promise<unknown> };

/**
 * The writes of a unit of work that nothing reads back before it commits, sent as ONE statement
 * at the end: `with w0 as (insert …), w1 as (update …), … select 1` (docs/money-path.md). A batch
 * of transfers pays one round trip for its balances, ledger entries, account transactions,
 * transfers, events, counters and idempotency records instead of one each.
 *
 * The rule that makes it safe: the parts run on one snapshot in no defined order, so no part may
 * depend on another's effect or touch the same row as another. Foreign keys between parts are
 * fine, and so are the after-row reference checks of migration 1240 (both run at the end of the
 * statement); CHECK constraints still hold per row, and
 * any violation fails the whole statement, so the unit rolls back whole as before.
 */
export class WriteSet {
  private readonly parts: WritePart[] = [];

  constructor(readonly db: Queryable) {}

  add(part: WritePart): void {
    this.parts.push(part);
  }

  /** Sends every part added so far as one statement (nothing when empty). */
  async flush(): Promise<void> {
    const parts = this.parts.splice(0);
    if (parts.length === 0) return;
    if (parts.length === 1) {
      await parts[0]!.execute(this.db);
      return;
    }
    await sql`with ${sql.join(parts.map((part, i) => sql`${sql.raw(`w${i}`)} as (${part})`))} select 1`.execute(this.db);
  }
}

/** Where a write goes: a connection or transaction (run now), or a WriteSet (run at its flush). */
export type Writer = Queryable | WriteSet;

/** Runs the write built on `to`'s database now, or defers it into the write set. */
export async function write(to: Writer, build: (db: Queryable) => WritePart): Promise<void> {
  if (to instanceof WriteSet) to.add(build(to.db));
  else await build(to).execute(to);
}

/**
 * Runs `work` with a write set: `to` itself when it is one (the caller sends it later), else a set
 * of its own that is sent, as one statement, when `work` is done.
 */
export async function inOneStatement<T>(to: Writer, work: (set: WriteSet) => Promise<T>): Promise<T> {
  const set = to instanceof WriteSet ? to : new WriteSet(to);
  const result = await work(set);
  if (set !== to) await set.flush();
  return result;
}

/** Several writes as one statement: now (on a connection or transaction) or at the write set's flush. */
export async function writeTogether(to: Writer, build: (db: Queryable) => WritePart[]): Promise<void> {
  await inOneStatement(to, async (set) => build(set.db).forEach((part) => set.add(part)));
}
