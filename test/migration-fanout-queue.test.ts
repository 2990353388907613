import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, expect, inject, it } from 'vitest';
import { openPGlite, openPostgres, type DatabaseHandle } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { newId } from '../src/lib/ids.js';
import { withDatabase } from './global-setup.js';

/**
 * Upgrading a database whose events wait for the webhook fan-out (migration 1100 replaced the
 * events.fanned_out_at mark by the event_fanout_queue table): no waiting event may be lost, none
 * already fanned out may be sent again, and events written by a process of the previous version
 * after the migration are queued too.
 */
const DIR = join(import.meta.dirname, '../src/db/migrations');
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** An empty database (no migrations applied). */
async function emptyDatabase(): Promise<DatabaseHandle> {
  const url = process.env.DATABASE_URL;
  if (!url) return openPGlite();
  const name = `fsapi_${inject('runId')}_upgrade_${newId().replace(/-/g, '').slice(-12)}`;
  const admin = async (q: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(q).finally(() => c.end());
  };
  await admin(`create database ${name}`);
  cleanups.push(() => admin(`drop database if exists ${name} with (force)`));
  return openPostgres(withDatabase(url, name), 2);
}

it('queues the events still waiting for the fan-out and every event written after, and only those', async () => {
  const handle = await emptyDatabase();
  cleanups.push(() => handle.close());
  // The schema as it was before 1100, recorded as applied the way migrate() records it.
  await handle.exec('create table schema_migrations (name text primary key, applied_at timestamptz not null default now())');
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith('.sql') && f < '1100')
    .sort()) {
    await handle.exec(readFileSync(join(DIR, file), 'utf8'));
    await sql`insert into schema_migrations (name) values (${file})`.execute(handle.db);
  }
  const [waiting, sent, tenant] = [newId(), newId(), newId()];
  await sql`
    insert into events (id, tenant_id, environment, event_type, event_category, event_group_id, payload, fanned_out_at)
    values (${waiting}, ${tenant}, 'sandbox', 'customer.created', 'customer', ${waiting}, '{}', null),
           (${sent}, ${tenant}, 'sandbox', 'customer.created', 'customer', ${sent}, '{}', now())`.execute(handle.db);

  expect((await migrate(handle))[0]).toBe('1100_event_fanout_queue.sql');

  const queued = await sql<{ event_id: string }>`select event_id from event_fanout_queue`.execute(handle.db);
  expect(queued.rows).toEqual([{ event_id: waiting }]);
  const events = await sql<{ id: string }>`select id from events order by id`.execute(handle.db);
  expect(events.rows.map((r) => r.id)).toEqual([waiting, sent]);

  // A process of the previous version, still running while a new one migrated, writes events
  // naming only the events table: the database queues them all the same.
  const [old1, old2] = [newId(), newId()];
  await sql`
    insert into events (id, tenant_id, environment, event_type, event_category, event_group_id, payload)
    values (${old1}, ${tenant}, 'sandbox', 'customer.created', 'customer', ${old1}, '{}'),
           (${old2}, ${tenant}, 'sandbox', 'customer.created', 'customer', ${old2}, '{}')`.execute(handle.db);
  const after = await sql<{ event_id: string }>`select event_id from event_fanout_queue order by event_id`.execute(handle.db);
  expect(after.rows.map((r) => r.event_id)).toEqual([waiting, old1, old2]);
});
