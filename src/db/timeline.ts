import { sql, type RawBuilder } from 'kysely';
import type { Timeline } from '../core/clock.js';

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
