import { sql, type CompiledQuery } from 'kysely';
import type { Queryable } from './client.js';
import { compiledPerShape } from './compiled.js';

/**
 * `plan_cache_mode` for the rest of the transaction, a generic plan or PostgreSQL's own choice
 * again, and with it `enable_seqscan`: off while the generic plan may be made. A connection makes
 * a named statement's generic plan once, at its first run, from the tables' sizes then, and keeps
 * it until the table is analyzed. A connection whose first batch claims while `idempotency_keys`
 * is nearly empty (a new database) planned the claim's `not exists` as a hash anti join over a
 * sequential scan of the whole table, and every later batch on that connection scanned the table
 * again as it grew, until autovacuum analyzed it (never, with autovacuum off: docs/benchmarks.md).
 * With sequential scans priced out, the generic plan probes the primary key on an empty table as
 * on a large one.
 */
function planCacheMode(db: Queryable, generic: boolean): CompiledQuery<unknown> {
  return generic ? planCacheModeOnce(db, 'force_generic_plan', 'off') : planCacheModeOnce(db, 'auto', 'on');
}

/** Built and compiled by Kysely once for each mode (db/compiled.ts). */
const planCacheModeOnce = compiledPerShape(
  (_db: Queryable, mode: string, seqscan: string) =>
    sql`select set_config('plan_cache_mode', ${mode}, true), set_config('enable_seqscan', ${seqscan}, true)`,
  (mode, seqscan) => ({ shape: mode, parameters: [mode, seqscan] }),
);

/**
 * `statement` sent on a generic plan: between `set_config('plan_cache_mode', 'force_generic_plan',
 * true)` and back to `auto`, three statements its caller sends in one round trip (db/pipeline.ts);
 * the statement's rows are the second result. For a prepared statement that takes its rows as
 * arrays (a batch's keys joined to `unnest`): each custom plan knows the arrays' length, so the
 * generic plan, which assumes ten rows, always looks dearer, and PostgreSQL plans the statement anew
 * at every call. Only for statements whose generic plan is the custom one (the same index, entered
 * at the same key): a generic plan cannot use a partial index on a parameter (`status = $1`), so
 * the mode (and sequential scans) are given back for the statements after it.
 */
export function onGenericPlan<R>(db: Queryable, statement: CompiledQuery<R>) {
  return [planCacheMode(db, true), statement, planCacheMode(db, false)] as const;
}
