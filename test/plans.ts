import { CompiledQuery, sql, type Transaction } from 'kysely';
import type { Db } from '../src/db/client.js';
import type { Database } from '../src/db/types.js';

/**
 * Every statement sent through `db`'s executor from now on, as compiled. A transaction has an
 * executor of its own: record it with the transaction (`recordSent(trx)`).
 */
export function recordSent(db: Db | Transaction<Database>): CompiledQuery[] {
  const executor = db.getExecutor();
  const sent: CompiledQuery[] = [];
  const execute = executor.executeQuery.bind(executor);
  executor.executeQuery = (query) => (sent.push(query), execute(query));
  return sent;
}

/** The statements a call sends, as compiled: it runs on an executor of its own that keeps them. */
export async function sentStatements(db: Db, call: (db: Db) => Promise<unknown>): Promise<CompiledQuery[]> {
  const own = db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result });
  const sent = recordSent(own);
  await call(own);
  return sent;
}

/** A parameter as SQL text for EXPLAIN EXECUTE: a number as it is, an array as array text, anything else as a string constant. */
function literal(v: unknown): string {
  const text = Array.isArray(v) ? `{${v.map((x) => `"${String(x).replace(/[\\"]/g, '\\$&')}"`).join(',')}}` : String(v);
  return typeof v === 'number' ? text : `'${text.replace(/'/g, "''")}'`;
}

/**
 * The plan `query` gets as a prepared statement run once in `trx`, under the settings the caller
 * made there. (EXPLAIN of a statement with bound parameters plans with their values.)
 */
export async function explainPrepared(trx: Transaction<Database>, query: CompiledQuery): Promise<string> {
  await trx.executeQuery(CompiledQuery.raw(`prepare planned as ${query.sql}`));
  const explained = await trx.executeQuery<Record<string, string>>(
    CompiledQuery.raw(`explain execute planned (${query.parameters.map(literal).join(', ')})`),
  );
  await trx.executeQuery(CompiledQuery.raw('deallocate planned'));
  return explained.rows.map((r) => Object.values(r)[0]).join('\n');
}

/**
 * The plan of a statement with sequential scans priced out (what is left uses an index, or
 * cannot), and generic, as a prepared statement's plan becomes after a few runs: made without
 * its parameters' values.
 */
export async function planWithoutSeqScans(db: Db, query: CompiledQuery, plan: 'generic' | 'custom' = 'generic'): Promise<string> {
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    await sql.raw(`set local plan_cache_mode = force_${plan}_plan`).execute(trx);
    return explainPrepared(trx, query);
  });
}

/**
 * How the connection's prepared statements whose text is `like` were planned: `run(trx, i)` eight
 * times in one transaction, which keeps one connection and so one plan cache, then its
 * `pg_prepared_statements` rows (PostgreSQL only).
 */
export async function planCounts(
  db: Db,
  like: string,
  run: (trx: Transaction<Database>, i: number) => Promise<unknown>,
): Promise<{ generic_plans: number; custom_plans: number }[]> {
  return db.transaction().execute(async (trx) => {
    for (let i = 0; i < 8; i++) await run(trx, i);
    const { rows } = await sql<{ generic_plans: string; custom_plans: string }>`
      select generic_plans::text, custom_plans::text from pg_prepared_statements where statement like ${like}`.execute(trx);
    return rows.map((r) => ({ generic_plans: Number(r.generic_plans), custom_plans: Number(r.custom_plans) }));
  });
}
