import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { DatabaseHandle } from './client.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Any fixed number: serializes migrations when several processes start against one PostgreSQL. */
const MIGRATION_LOCK = 72_310_001;

/**
 * Applies every `migrations/*.sql` not yet applied, in file-name order, each in its own
 * transaction. Files are plain SQL written for PostgreSQL 15 (and so PGlite's 18 too).
 * Module ranges keep parallel work from colliding: 0001-0099 foundation, 0100 ledger and
 * accounts, 0200 KYC and features, 0300 webhooks, 0400 payouts and collections, 0500 cards,
 * 0600 dashboard. `options.before`: only the files whose names sort before it (an upgrade test
 * builds the schema a previous version left).
 */
export async function migrate(handle: DatabaseHandle, options: { before?: string } = {}): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.sql') && (options.before === undefined || f < options.before))
    .sort();
  const createTable = `create table if not exists schema_migrations (
    name text primary key, applied_at timestamptz not null default now())`;
  const applied: string[] = [];
  if (handle.kind === 'postgres') {
    // Each file in its own transaction that first takes a transaction-level advisory lock, so
    // processes starting together apply each file once. Transaction-level, not session-level:
    // behind PgBouncer in transaction mode a session lock would stay on whichever server
    // connection took it (the unlock may run on another) and block every later start.
    const done = await handle.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
      await sql.raw(createTable).execute(trx);
      return new Set((await sql<{ name: string }>`select name from schema_migrations`.execute(trx)).rows.map((r) => r.name));
    });
    for (const file of files) {
      if (done.has(file)) continue;
      const body = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
      const ran = await handle.db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(${MIGRATION_LOCK})`.execute(trx);
        const again = await sql`select 1 from schema_migrations where name = ${file}`.execute(trx);
        if (again.rows.length > 0) return false; // another process applied it meanwhile
        await sql.raw(body).execute(trx);
        await sql`insert into schema_migrations (name) values (${file})`.execute(trx);
        return true;
      });
      if (ran) applied.push(file);
    }
    return applied;
  }
  await handle.exec(createTable);
  const done = new Set((await sql<{ name: string }>`select name from schema_migrations`.execute(handle.db)).rows.map((r) => r.name));
  for (const file of files) {
    if (done.has(file)) continue;
    const body = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
    const name = file.replace(/'/g, "''");
    await handle.exec(`begin;\n${body}\n;insert into schema_migrations (name) values ('${name}');\ncommit;`);
    applied.push(file);
  }
  return applied;
}
