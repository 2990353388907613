import type { CompiledQuery, QueryResult, UnknownRow } from 'kysely';
import type { ItemOutcome } from '../core/errors.js';
import type { Queryable, Trx } from './client.js';
import type { WriteSet } from './write-set.js';

/**
 * Statements sent back to back in one round trip (`pipelined`), such as a batch's first locks
 * right behind its idempotency claim, and how to read their rows.
 */
export interface LockPlan<A> {
  statements: CompiledQuery<unknown>[];
  read(rows: unknown[][]): A;
}

/**
 * One gathered batch of idempotent requests, open in its transaction, as the idempotency layer
 * (http/idempotency-batch.ts) hands it to the module that moves the money. The module's pipeline
 * calls the steps in order: `claim` first, its own steps, then `answer`; the idempotency layer
 * then writes the records, commits and answers each request.
 */
export interface KeyedBatch<I, T> {
  readonly trx: Trx;
  /** Every request of the batch, in arrival order, claimed or not. */
  readonly inputs: I[];
  /** Writes that nothing reads back before the commit: sent with the idempotency records as one statement. */
  readonly writes: WriteSet;
  /**
   * Claims every Idempotency-Key (its lock, then one statement), `first` (the pipeline's first
   * locks) right behind in the same round trip: PostgreSQL runs them after the claim, so the lock
   * order is the claim's and then the pipeline's. The requests claimed, in order (the others are replays or
   * keys in progress, which the idempotency layer answers), and what `first` read. What `first`
   * locked for a request that turns out not to be claimed stays locked until the commit: harmless.
   */
  claim<A>(first: LockPlan<A>): Promise<{ claimed: I[]; first: A }>;
  claim<A>(first: LockPlan<A> | undefined): Promise<{ claimed: I[]; first: A | undefined }>;
  /** Each claimed request's outcome, in the order `claim` returned them. */
  answer(outcomes: ItemOutcome<T>[]): void;
}

type RowsOf<T extends readonly CompiledQuery<unknown>[]> = { [K in keyof T]: T[K] extends CompiledQuery<infer R> ? R[] : never };

/**
 * Sends a transaction's statements back to back: each leaves before the one before it is
 * answered, so n statements cost one round trip (PostgreSQL connections are pipelined,
 * db/client.ts; PGlite runs them one after another as before). Kysely runs a transaction's
 * statements one at a time, each after the previous answer; this hands them to its connection in
 * one turn. PostgreSQL still runs them in the order given, so locks are taken in that order. Should
 * one fail, the transaction is aborted and the ones after it fail too; the first failure is thrown.
 * Each result then passes the plugins, as Kysely's own executeQuery passes them.
 */
export async function pipelined<T extends readonly CompiledQuery<unknown>[]>(db: Queryable, ...queries: T): Promise<RowsOf<T>> {
  const executor = db.getExecutor();
  // Settled, then the first failure in statement order: the statements after a failed one fail
  // too ("current transaction is aborted"), and one of theirs may settle first; the caller must
  // see the cause (a unique violation, a deadlock) to decide whether a rerun helps.
  const settled = await executor.provideConnection((connection) =>
    Promise.allSettled(queries.map((query) => connection.executeQuery(query))),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  const results = settled.map((s) => (s as PromiseFulfilledResult<QueryResult<unknown>>).value);
  const rows = [];
  for (const [i, result] of results.entries()) {
    let transformed = result as QueryResult<UnknownRow>;
    for (const plugin of executor.plugins)
      transformed = await plugin.transformResult({ result: transformed, queryId: queries[i]!.queryId });
    rows.push(transformed.rows);
  }
  return rows as RowsOf<T>;
}
