import { sql, type CompiledQuery } from 'kysely';
import type { Queryable } from './client.js';

/** `plan_cache_mode` for the rest of the transaction: a generic plan, or PostgreSQL's own choice again. */
function planCacheMode(db: Queryable, generic: boolean): CompiledQuery<unknown> {
  return sql`select set_config('plan_cache_mode', ${generic ? 'force_generic_plan' : 'auto'}, true)`.compile(db);
}

/**
 * `statement` sent on a generic plan: between `set_config('plan_cache_mode', 'force_generic_plan',
 * true)` and back to `auto`, three statements its caller sends in one round trip (db/pipeline.ts);
 * the statement's rows are the second result. For a prepared statement that takes its rows as
 * arrays (a batch's keys joined to `unnest`): each custom plan knows the arrays' length, so the
 * generic plan, which assumes ten rows, always looks dearer, and PostgreSQL plans the statement anew
 * at every call. Only for statements whose generic plan is the custom one (the same index, entered
 * at the same key): a generic plan cannot use a partial index on a parameter (`status = $1`), so
 * the mode is given back for the statements after it.
 */
export function onGenericPlan<R>(db: Queryable, statement: CompiledQuery<R>) {
  return [planCacheMode(db, true), statement, planCacheMode(db, false)] as const;
}
