import type { CompiledQuery, QueryResult, UnknownRow } from 'kysely';
import type { Queryable } from './client.js';

/**
 * Statements a batch sends right behind its idempotency claim, in one round trip, and how to read
 * their rows (http/idempotency-batch.ts `planFirstLocks`).
 */
export interface LockPlan<A> {
  statements: CompiledQuery<unknown>[];
  read(rows: unknown[][]): A;
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
  const results = await executor.provideConnection((connection) => Promise.all(queries.map((query) => connection.executeQuery(query))));
  const rows = [];
  for (const [i, result] of results.entries()) {
    let transformed = result as QueryResult<UnknownRow>;
    for (const plugin of executor.plugins)
      transformed = await plugin.transformResult({ result: transformed, queryId: queries[i]!.queryId });
    rows.push(transformed.rows);
  }
  return rows as RowsOf<T>;
}
