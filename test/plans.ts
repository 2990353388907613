import { CompiledQuery, sql } from 'kysely';
import type { Db } from '../src/db/client.js';

/** The statements a call sends, as compiled: it runs on an executor of its own that keeps them. */
export async function sentStatements(db: Db, call: (db: Db) => Promise<unknown>): Promise<CompiledQuery[]> {
  const own = db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result });
  const executor = own.getExecutor();
  const sent: CompiledQuery[] = [];
  const execute = executor.executeQuery.bind(executor);
  executor.executeQuery = (query) => (sent.push(query), execute(query));
  await call(own);
  return sent;
}

/**
 * The plan of a statement with sequential scans priced out (what is left uses an index, or
 * cannot), and generic, as a prepared statement's plan becomes after a few runs: made without
 * its parameters' values. (EXPLAIN of a statement with bound parameters plans with their values.)
 */
export async function planWithoutSeqScans(db: Db, query: CompiledQuery, plan: 'generic' | 'custom' = 'generic'): Promise<string> {
  const literal = (v: unknown) => (typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`);
  return db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    await sql.raw(`set local plan_cache_mode = force_${plan}_plan`).execute(trx);
    await trx.executeQuery(CompiledQuery.raw(`prepare planned as ${query.sql}`));
    const explained = await trx.executeQuery<Record<string, string>>(
      CompiledQuery.raw(`explain execute planned (${query.parameters.map(literal).join(', ')})`),
    );
    await trx.executeQuery(CompiledQuery.raw('deallocate planned'));
    return explained.rows.map((r) => Object.values(r)[0]).join('\n');
  });
}
