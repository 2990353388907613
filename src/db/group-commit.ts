import { sql } from 'kysely';
import type { Db, Trx } from './client.js';

/** Takes the locks of a whole batch: `keys` are every unit's declared keys, sorted and unique. */
export type LockAll = (trx: Trx, keys: string[]) => Promise<void>;

interface Item {
  unit: (trx: Trx) => Promise<unknown>;
  keys: string[];
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export interface GroupCommitOptions {
  /** Units per database transaction. */
  maxBatch: number;
  /** Batches in flight at once. */
  lanes: number;
}

const RETRYABLE = new Set(['40P01', '40001']); // deadlock, serialization failure

/**
 * Group commit: runs many independent units of work in one database transaction, each inside its
 * own SAVEPOINT, so one unit's failure rolls back only that unit (all-or-nothing per unit) while
 * the commit — and its WAL flush — is shared by the whole batch. A unit's promise settles only
 * after the batch commits, so a caller never reports work that is not durable.
 *
 * Batches form by themselves: with every lane busy, new units queue, and the next free lane takes
 * up to `maxBatch` of them; at low load a unit runs alone at once (no timer, no added latency).
 * Each batch first takes every lock its units declared (`keys`), in one sorted statement, so
 * concurrent batches acquire rows in one global order and cannot deadlock on them; a deadlock
 * or serialization failure that still happens (undeclared rows) reruns the whole batch, which is
 * safe because nothing of it committed. PostgreSQL only: PGlite runs one transaction at a time.
 */
export class GroupCommit {
  private readonly queue: Item[] = [];
  private running = 0;

  constructor(
    private readonly db: Db,
    private readonly lockAll: LockAll,
    private readonly options: GroupCommitOptions = { maxBatch: 32, lanes: 4 },
  ) {}

  /** Runs `unit` in a batch; `keys` name the rows it will lock (account ids). */
  run<T>(unit: (trx: Trx) => Promise<T>, keys: string[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ unit, keys, resolve: resolve as (v: unknown) => void, reject });
      this.kick();
    });
  }

  private kick() {
    while (this.running < this.options.lanes && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.running++;
      void this.execute(batch).finally(() => {
        this.running--;
        this.kick();
      });
    }
  }

  private async execute(batch: Item[]): Promise<void> {
    if (batch.length === 1) {
      // Alone (low load): its own transaction, no savepoint or up-front locks (the unit takes its
      // own locks in order), so a quiet system pays nothing for batching.
      const item = batch[0]!;
      await this.db.transaction().execute(item.unit).then(item.resolve, item.reject);
      return;
    }
    for (let attempt = 1; ; attempt++) {
      const outcomes: ({ ok: true; value: unknown } | { ok: false; err: unknown })[] = [];
      try {
        await this.db.transaction().execute(async (trx) => {
          await this.lockAll(trx, [...new Set(batch.flatMap((item) => item.keys))].sort());
          for (const item of batch) outcomes.push(await this.runOne(trx, item));
        });
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (code && RETRYABLE.has(code) && attempt < 4) continue;
        for (const item of batch) item.reject(err);
        return;
      }
      batch.forEach((item, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) item.resolve(outcome.value);
        else item.reject(outcome.err);
      });
      return;
    }
  }

  private async runOne(trx: Trx, item: Item): Promise<{ ok: true; value: unknown } | { ok: false; err: unknown }> {
    await sql`savepoint group_commit_unit`.execute(trx);
    try {
      // No RELEASE (a round trip saved): savepoints nest, and ROLLBACK TO names the latest one.
      const value = await item.unit(trx);
      return { ok: true, value };
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code && RETRYABLE.has(code)) throw err; // the transaction is doomed: rerun the batch
      await sql`rollback to savepoint group_commit_unit`.execute(trx);
      return { ok: false, err };
    }
  }
}
