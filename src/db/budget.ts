import { sql } from 'kysely';
import type { Db } from './client.js';

/**
 * The connection budget. Each process opens at most `DB_POOL_SIZE` pooled connections, and an
 * API process one more for its change listener (LISTEN). With `DB_CLUSTER_PROCESSES` set (how
 * many processes of the deployment share the database) the whole deployment's need is checked
 * against the server's `max_connections` less its reserved slots, and a deployment that cannot
 * fit refuses to start. Without it, only this process's need is compared with the slots free
 * right now, and a shortfall is a warning (other processes' pools may be idle).
 * Behind a pooler (PgBouncer: DATABASE_DIRECT_URL differs from DATABASE_URL) the pool connects
 * to the pooler, not the server, so only the listeners count against the server.
 */
export interface BudgetInput {
  poolSize: number;
  listener: boolean;
  processes?: number | undefined;
  pooled: boolean;
}

export interface BudgetVerdict {
  level: 'ok' | 'warn' | 'error';
  message: string;
  figures: { maxConnections: number; reserved: number; inUse: number; perProcess: number; planned: number | null };
}

export async function checkConnectionBudget(db: Db, input: BudgetInput): Promise<BudgetVerdict> {
  const { rows } = await sql<{ max: string; reserved: string; in_use: string }>`
    select current_setting('max_connections') as max,
           (current_setting('superuser_reserved_connections')::int
             + coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0))::text as reserved,
           (select count(*) from pg_stat_activity where backend_type = 'client backend')::text as in_use`.execute(db);
  const row = rows[0]!;
  const maxConnections = Number(row.max);
  const reserved = Number(row.reserved);
  const inUse = Number(row.in_use);
  const usable = maxConnections - reserved;
  const perProcess = (input.pooled ? 0 : input.poolSize) + (input.listener ? 1 : 0);
  const planned = input.processes ? input.processes * perProcess : null;
  const figures = { maxConnections, reserved, inUse, perProcess, planned };
  const what = input.pooled
    ? `${input.listener ? 1 : 0} direct listener connection per process (the pool goes through the pooler)`
    : `DB_POOL_SIZE=${input.poolSize}${input.listener ? ' + 1 listener' : ''} = ${perProcess} per process`;
  if (planned !== null && planned > usable) {
    return {
      level: 'error',
      figures,
      message:
        `Connection budget exceeded: ${input.processes} processes x ${what} need ${planned} connections, ` +
        `but PostgreSQL allows ${usable} (max_connections ${maxConnections} less ${reserved} reserved). ` +
        'Lower DB_POOL_SIZE, run fewer processes, raise max_connections, or put PgBouncer in front (docs/scaling.md).',
    };
  }
  if (perProcess > usable - inUse) {
    return {
      level: 'warn',
      figures,
      message:
        `This process may open ${perProcess} connections (${what}) but only ${Math.max(0, usable - inUse)} of ` +
        `${usable} are free now; requests will wait for connections when the others are busy (docs/scaling.md).`,
    };
  }
  return {
    level: 'ok',
    figures,
    message: `connection budget: ${what}${planned !== null ? `, ${planned} for ${input.processes} processes` : ''} of ${usable}`,
  };
}
