import { sql } from 'kysely';
import { expect, it, onTestFinished } from 'vitest';
import { migrate } from '../../src/db/migrate.js';
import { newId } from '../../src/lib/ids.js';
import { openTestDatabase } from '../harness.js';

/**
 * Upgrading a database whose events wait for the webhook fan-out (migration 1100 replaced the
 * events.fanned_out_at mark by the event_fanout_queue table): no waiting event may be lost, none
 * already fanned out may be sent again, and events written by a process of the previous version
 * after the migration are queued too.
 */
it('queues the events still waiting for the fan-out and every event written after, and only those', async () => {
  const handle = await openTestDatabase({ migrated: false });
  onTestFinished(() => handle.close());
  await migrate(handle, { before: '1100' }); // the schema as it was before 1100
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
