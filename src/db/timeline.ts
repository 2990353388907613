import { sql, type RawBuilder } from 'kysely';
import type { Timeline } from '../core/clock.js';
import type { Scope } from '../core/context.js';

/** The timeline's instant in SQL: the clock's time, or now(). */
export function nowOf(t: Timeline): RawBuilder<Date> {
  return t.now ? sql<Date>`${t.now.toISOString()}::timestamptz` : sql<Date>`now()`;
}

/**
 * The rows of `table` (its tenant_id and environment) a timeline handles: those of the clock's
 * environment, or for real time those of every environment no test clock holds (migration 1200).
 */
export function inTimeline(t: Timeline, table: string): RawBuilder<boolean> {
  const tenant = sql.ref(`${table}.tenant_id`);
  const environment = sql.ref(`${table}.environment`);
  if (t.scope) return sql<boolean>`(${tenant} = ${t.scope.tenantId} and ${environment} = ${t.scope.environment})`;
  return sql<boolean>`not exists (select 1 from test_clocks tc
    where tc.tenant_id = ${tenant} and tc.environment = ${environment} and tc.attached)`;
}

/**
 * Now as one business environment sees it, in SQL: the time of the test clock its sandbox is
 * attached to, else now(). For what a request stamps and compares itself (a quote's expiry),
 * where no worker runs: the clock's subquery is one index probe, and live never has a clock.
 */
export function nowIn(scope: Scope): RawBuilder<Date> {
  if (scope.environment !== 'sandbox') return sql<Date>`now()`;
  return sql<Date>`coalesce((select tc.frozen_time from test_clocks tc
    where tc.tenant_id = ${scope.tenantId} and tc.environment = ${scope.environment} and tc.attached), now())`;
}
