import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { openPostgres, type DatabaseHandle } from '../../src/db/client.js';
import * as ledger from '../../src/ledger/index.js';
import { newId } from '../../src/lib/ids.js';
import { createTenant } from '../../src/modules/tenants/service.js';
import { withDatabase } from '../global-setup.js';
import { startProcess, type Proc } from '../scale/cluster.js';
import { MultiClient, runLoad, setUp, type LoadResult } from '../scale/load.js';
import { pgbouncerInstalled, startPgBouncer } from '../scale/pgbouncer.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

/**
 * Many processes, one database: 2 API processes and 2 workers (real `src/main.ts` children) take
 * a bounded load spread over both API processes, with clients whose timeouts send the same
 * request (same Idempotency-Key) to the other process. Midway one API process gets SIGTERM.
 * Then every promise is checked in the database and at a real webhook receiver.
 * PostgreSQL only (PGlite is one process by design); the second run goes through PgBouncer in
 * transaction mode.
 */
const url = process.env.DATABASE_URL;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createDatabase(): Promise<string> {
  const name = `fsapi_${inject('runId')}_mp${newId().replace(/-/g, '').slice(-12)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name} template ${inject('pgTemplate')}`);
  await admin.end();
  return name;
}

async function dropDatabase(name: string) {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

interface Scenario {
  name: string;
  loadMs: number;
  bouncer: boolean;
}

const scenarios: Scenario[] = [
  { name: 'direct to PostgreSQL', loadMs: 15_000, bouncer: false },
  { name: 'through PgBouncer in transaction mode', loadMs: 10_000, bouncer: true },
];

for (const scenario of scenarios) {
  const skip = !url || (scenario.bouncer && !pgbouncerInstalled());
  describe.skipIf(skip)(`2 API + 2 worker processes on one database, ${scenario.name}`, () => {
    let database: string;
    let handle: DatabaseHandle;
    let bouncer: Awaited<ReturnType<typeof startPgBouncer>> | undefined;
    let rx: Receiver;
    let procs: Proc[] = [];
    let dataDir: string;

    beforeAll(async () => {
      database = await createDatabase();
      handle = openPostgres(withDatabase(url!, database), 4);
      rx = await startReceiver();
      dataDir = mkdtempSync(join(tmpdir(), 'fsapi-mp-'));
    });

    afterAll(async () => {
      for (const p of procs) await p.stop().catch(() => null);
      await bouncer?.stop();
      await rx?.close();
      await handle?.close();
      if (database) await dropDatabase(database);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    });

    it('keeps every promise under load, and a SIGTERM mid-load loses no acknowledged request', { timeout: 400_000 }, async () => {
      const direct = withDatabase(url!, database);
      if (scenario.bouncer) bouncer = await startPgBouncer(url!, 12);
      const env = {
        DATABASE_URL: bouncer ? bouncer.urlFor(database) : direct,
        // LISTEN needs a session: the key-cache listener connects directly.
        DATABASE_DIRECT_URL: direct,
        // PgBouncer 1.18 (Debian's) in transaction mode keeps no prepared statement across transactions.
        ...(bouncer ? { DB_PREPARED_STATEMENTS: 'false' } : {}),
        SECRETS_KEY: randomBytes(32).toString('base64'),
        DEMO_TENANT: 'false',
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
        DB_POOL_SIZE: '6',
        SANDBOX_RAIL_DELAY_MS: '300',
        JOB_INTERVAL_MAX_MS: '300',
      };
      const tenant = await handle.db.transaction().execute((trx) => createTenant(trx, 'Scale Co'));
      procs = await Promise.all([
        startProcess('api-a', 'api', env),
        startProcess('api-b', 'api', env),
        startProcess('worker-1', 'worker', env),
        startProcess('worker-2', 'worker', env),
      ]);
      const [apiA, apiB, , worker2] = procs as [Proc, Proc, Proc, Proc];
      const client = new MultiClient([apiA.base, apiB.base], tenant.sandbox.secret_key);
      const fixture = await setUp(client, rx.url);

      // The load; halfway, SIGTERM to api-b while requests are in flight on it (later to worker-2). Rates flip
      // about the limit orders' target every second, so orders become due again and again.
      let sigterm: Promise<number | null> | undefined;
      let workerSigterm: Promise<number | null> | undefined;
      let rateHigh = false;
      const load: LoadResult = await runLoad(client, fixture, scenario.loadMs, 6, async (elapsed) => {
        rateHigh = !rateHigh;
        await client.ok('POST', '/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: rateHigh ? '1700' : '1500' });
        if (!sigterm && elapsed >= scenario.loadMs / 2) sigterm = apiB.stop();
        // A worker too, later: its loops finish their tick and stop; the other worker carries on.
        if (!workerSigterm && elapsed >= (scenario.loadMs * 2) / 3) workerSigterm = worker2.stop();
      });
      const exitCode = await sigterm;
      expect(await workerSigterm, worker2.output.join('').slice(-3000)).toBe(0);
      if (load.refused.length > 0) {
        for (const p of [apiA, apiB])
          console.log(
            p.name,
            p.output
              .join('')
              .split('\n')
              .filter((l) => l.includes('"level":50'))
              .slice(0, 6)
              .join('\n'),
          );
      }
      expect(exitCode, apiB.output.join('').slice(-3000)).toBe(0);
      expect(load.refused.map((r) => `${r.kind} ${r.status} ${(r.body as any)?.error?.message}`)).toEqual([]);
      expect(client.stats.retries).toBeGreaterThan(0);
      expect(client.stats.crossed).toBeGreaterThan(0);

      const db = handle.db;
      const t = tenant.tenant_id;
      const of = (kind: string) => load.acked.filter((a) => a.kind === kind);
      const ids = (kind: string) =>
        of(kind)
          .map((a) => a.id)
          .sort();

      // Every Idempotency-Key had one effect: one row per acknowledged request, the id it answered.
      const byRef = async (table: 'transfers' | 'collections', refs: string[]) =>
        refs.length === 0
          ? []
          : (
              await db
                .selectFrom(table)
                .select(['id', 'client_reference'])
                .where('tenant_id', '=', t)
                .where('client_reference', 'in', refs)
                .execute()
            )
              .map((r) => r.id)
              .sort();
      const transferRefs = [...of('transfer'), ...of('payout')].map((a) => a.ref);
      expect(await byRef('transfers', transferRefs)).toEqual([...ids('transfer'), ...ids('payout')].sort());
      expect(
        await byRef(
          'collections',
          of('collection').map((a) => a.ref),
        ),
      ).toEqual(ids('collection'));
      const auths = await db.selectFrom('card_authorizations').select(['id', 'merchant_name']).where('tenant_id', '=', t).execute();
      expect(auths.map((a) => a.id).sort()).toEqual(ids('card_authorization'));
      const loadCustomers = await db
        .selectFrom('customers')
        .select('id')
        .where('tenant_id', '=', t)
        .where('email', 'like', 'john.doe+ld-%')
        .execute();
      expect(loadCustomers.map((c) => c.id).sort()).toEqual(ids('customer'));
      const orders = await db
        .selectFrom('fx_orders')
        .select(['id', 'status'])
        .where('tenant_id', '=', t)
        .where('order_type', '=', 'limit')
        .execute();
      expect(orders.map((o) => o.id).sort()).toEqual(ids('limit_order'));

      // Expiry: the unpaid collections and the open authorizations age past their time.
      await sql`update collections set expires_at = now() - interval '1 second' where tenant_id = ${t} and status = 'pending'`.execute(db);
      await sql`update card_authorizations set expires_at = now() - interval '1 second' where tenant_id = ${t} and status = 'approved'`.execute(
        db,
      );
      // One last rate above the target: every waiting limit order becomes due.
      await client.ok('POST', '/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1700' });

      const count = async (q: string) => Number((await sql<{ n: string }>`${sql.raw(q)}`.execute(db)).rows[0]!.n);
      // The load runs for a fixed time, so a faster machine leaves more behind it (thousands of
      // webhook deliveries for one worker): the wait lasts while the work left keeps shrinking,
      // and fails once 90 s pass without it getting any smaller (or after 240 s in all).
      let fewestOpen = Infinity;
      let progressAt = Date.now();
      await until(
        'payouts settled, expiries run, orders executed, webhooks delivered',
        async () => {
          const open = await count(`
          select (select count(*) from transfers where tenant_id = '${t}' and status not in ('completed', 'failed'))
               + (select count(*) from collections where tenant_id = '${t}' and status = 'pending')
               + (select count(*) from card_authorizations where tenant_id = '${t}' and status = 'approved')
               + (select count(*) from fx_orders where tenant_id = '${t}' and status = 'pending')
               + (select count(*) from event_fanout_queue q join events e on e.id = q.event_id where e.tenant_id = '${t}')
               + (select count(*) from webhook_deliveries where tenant_id = '${t}' and status <> 'sent') as n`);
          if (open < fewestOpen) [fewestOpen, progressAt] = [open, Date.now()];
          if (open > 0 && Date.now() - progressAt > 90_000) throw new Error(`${open} left with no progress for 90 s`);
          return open === 0;
        },
        240_000,
      );

      // The ledger reconciles.
      const report = await ledger.reconcile(db, t);
      expect(report.ok, JSON.stringify(report)).toBe(true);

      // Each sandbox rail job ran exactly once: one rail row per payout, settled, one completion event.
      const payoutIds = ids('payout');
      const rails = await db.selectFrom('rail_payouts').select(['transfer_id', 'state']).where('tenant_id', '=', t).execute();
      expect(rails.map((r) => r.transfer_id).sort()).toEqual(payoutIds);
      expect(new Set(rails.map((r) => r.state))).toEqual(new Set(['settled']));
      const eventCounts = async (type: string) => {
        const rows = await sql<{ g: string; n: string }>`select event_group_id as g, count(*) as n from events
          where tenant_id = ${t} and event_type = ${type} group by event_group_id`.execute(db);
        return new Map(rows.rows.map((r) => [r.g, Number(r.n)]));
      };
      const completed = await eventCounts('transfer.status.completed');
      for (const id of payoutIds) expect(completed.get(id), `payout ${id}`).toBe(1);

      // Each expiry ran exactly once.
      const expired = await eventCounts('collection.status.expired');
      const unpaid = await db.selectFrom('collections').select('id').where('tenant_id', '=', t).where('status', '=', 'expired').execute();
      expect(unpaid.length).toBeGreaterThan(0);
      for (const { id } of unpaid) expect(expired.get(id), `collection ${id}`).toBe(1);
      expect([...expired.values()].every((n) => n === 1)).toBe(true);
      const auth = await db.selectFrom('card_authorizations').select(['status']).where('tenant_id', '=', t).execute();
      expect(auth.every((a) => a.status === 'expired' || a.status === 'declined')).toBe(true);

      // Limit orders executed at most once (and, the rate being above target at the end, once).
      const executed = await eventCounts('fx.order.completed');
      for (const o of orders) expect(executed.get(o.id) ?? 0, `order ${o.id}`).toBeLessThanOrEqual(1);
      const finalOrders = await db
        .selectFrom('fx_orders')
        .select(['id', 'status'])
        .where('tenant_id', '=', t)
        .where('order_type', '=', 'limit')
        .execute();
      for (const o of finalOrders) if (o.status === 'completed') expect(executed.get(o.id)).toBe(1);

      // Every event reached the receiver; a duplicate only where the delivery was attempted again.
      const events = await db.selectFrom('events').select('id').where('tenant_id', '=', t).where('environment', '=', 'sandbox').execute();
      const received = new Map<string, number>();
      for (const r of rx.received) received.set(String(r.headers['webhook-id']), (received.get(String(r.headers['webhook-id'])) ?? 0) + 1);
      const attempts = new Map(
        (
          await sql<{
            e: string;
            n: string;
          }>`select event_id as e, count(*) as n from webhook_attempts where tenant_id = ${t} group by event_id`.execute(db)
        ).rows.map((r) => [r.e, Number(r.n)]),
      );
      // Events before the endpoint existed (none: it is the first thing set up) would be exempt.
      const missing = events.filter((e) => !received.has(e.id));
      expect(missing.length, `events never delivered: ${missing.slice(0, 5).map((e) => e.id)}`).toBe(0);
      for (const [id, n] of received) if (n > 1) expect(n, `event ${id} duplicates`).toBeLessThanOrEqual(attempts.get(id) ?? 1);

      // Every acknowledged request, including those api-b answered before its SIGTERM, is there.
      expect(load.acked.length).toBeGreaterThan(20);
      const summary = {
        acknowledged: load.acked.length,
        ...client.stats,
        events: events.length,
        deliveries: rx.received.length,
      };
      console.log(`multi-process (${scenario.name}):`, JSON.stringify(summary));

      // The rest shut down cleanly. If one does not, what the database sessions were doing just
      // before says why.
      const sessions = await sql<Record<string, unknown>>`select pid, application_name, state, wait_event_type, wait_event,
          now() - xact_start as in_transaction_for, left(query, 200) as query
        from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`.execute(db);
      for (const p of procs) {
        if (p === apiB || p === worker2) continue;
        const code = await p.stop();
        if (code !== 0) console.log(`${p.name} did not stop cleanly; sessions before:`, JSON.stringify(sessions.rows, null, 1));
        expect(code, p.output.join('').slice(-2000)).toBe(0);
      }
    });
  });
}
