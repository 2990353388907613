import fc from 'fast-check';
import { sql } from 'kysely';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fanOutTick, webhookJobs } from '../../src/modules/webhooks/delivery.js';
import { recordEvents } from '../../src/modules/webhooks/outbox.js';
import { claimDue, dueCandidates, noteEndpointOutcomes } from '../../src/modules/webhooks/queue-repo.js';
import { newId } from '../../src/lib/ids.js';
import { runJobs } from '../../src/workers/index.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';
import { metricsRegistry } from '../../src/lib/metrics.js';
import { startReceiver, until } from './receiver.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** A business with `endpoints` endpoints at `url`, and `events` events waiting for delivery. */
async function backlog(url: string, endpoints: number, events: number) {
  const biz = await t.tenant('Busy Hooks Co');
  const api = clientFor(t, biz.sandbox.secret_key);
  const ids: string[] = [];
  for (let i = 0; i < endpoints; i++) ids.push((await api.post('/v1/webhooks/endpoints', { url })).body.data.id);
  const ctx = { tenantId: biz.tenant_id, environment: 'sandbox' as const };
  for (let i = 0; i < events; i += 200) {
    const list = Array.from({ length: Math.min(200, events - i) }, (_, j) => ({
      ctx,
      eventType: 'customer.created' as const,
      data: { id: `cus_${i + j}` },
    }));
    await t.db.transaction().execute((trx) => recordEvents(trx, list));
  }
  while (await fanOutTick(t.db));
  return ids;
}

describe('webhook delivery throughput', () => {
  it('refills a slot the moment its request ends, not after the poll interval', async () => {
    const rx = await startReceiver();
    await backlog(rx.url, 1, 12);
    // One endpoint, two of its deliveries in flight at a time, and a poll interval far longer
    // than the test: the pool used to claim again only after pollMs, so a busy endpoint got
    // perEndpoint deliveries per interval (2 here, then a minute's wait).
    const jobs = runJobs(
      webhookJobs({ db: t.db, sealer: t.sealer }, { perEndpoint: 2, maxInFlight: 4, pollMs: 60_000, allowLoopback: true }),
      t.app.log,
    );
    try {
      await until(
        () => rx.received.length >= 12,
        async () => undefined,
      );
    } finally {
      await jobs.stop();
      await rx.close();
    }
    expect(new Set(rx.received.map((r) => r.headers['webhook-id'])).size).toBe(12);
  });

  it("reads none of a busy endpoint's backlog to find another endpoint's due delivery", async () => {
    const [busy] = await backlog('http://127.0.0.1:9/busy', 1, 1000);
    const [quiet] = await backlog('http://127.0.0.1:9/quiet', 1, 1);
    // The busy endpoint is at its limit: two deliveries in flight under a live lease.
    await sql`
      update webhook_deliveries set status = 'processing', next_attempt_at = now() + interval '1 minute'
      where id in (select id from webhook_deliveries where endpoint_id = ${busy} order by id limit 2)`.execute(t.db);
    await sql`analyze webhook_deliveries`.execute(t.db);

    const { rows } = await sql<{ 'QUERY PLAN': unknown }>`explain (analyze, format json) ${dueCandidates(10, 2)}`.execute(t.db);
    const plan = rows[0]!['QUERY PLAN'];
    // Rows the plan read from webhook_deliveries: those it returned and those it filtered out.
    let read = 0;
    const walk = (node: Record<string, unknown>) => {
      if (node['Relation Name'] === 'webhook_deliveries') {
        read += Number(node['Actual Rows'] ?? 0) * Number(node['Actual Loops'] ?? 1);
        read += Number(node['Rows Removed by Filter'] ?? 0) + Number(node['Rows Removed by Index Recheck'] ?? 0);
      }
      for (const child of (node['Plans'] as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk((Array.isArray(plan) ? plan : JSON.parse(String(plan)))[0].Plan);
    // Before: every due delivery of the busy endpoint was read (over 1,000 rows) on every claim.
    expect(read).toBeLessThan(50);

    const claimed = await t.db.transaction().execute((trx) => claimDue(trx, 10, 60_000, newId(), { perEndpoint: 2 }));
    expect(claimed.map((c) => c.endpoint_id)).toEqual([quiet]);
    expect(claimed[0]!.payload.event_type).toBe('customer.created');
    await sql`update webhook_deliveries set status = 'failed', next_attempt_at = null where endpoint_id in (${busy}, ${quiet})`.execute(
      t.db,
    );
  });

  it('records attempts that end together in one write, each with its own outcome', async () => {
    // Answers nothing until all six requests are in, then all at once: 200 on /ok, 500 on
    // /fail, 410 on /gone, so the six attempts end in the same turn of the pool's event loop.
    const held: { path: string; res: ServerResponse }[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        held.push({ path: req.url ?? '', res });
        if (held.length < 6) return;
        for (const h of held.splice(0)) {
          h.res.writeHead(h.path === '/ok' ? 200 : h.path === '/fail' ? 500 : 410);
          h.res.end();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const biz = await t.tenant('Together Co');
    const api = clientFor(t, biz.sandbox.secret_key);
    const ids: Record<string, string> = {};
    for (const path of ['/ok', '/fail', '/gone']) ids[path] = (await api.post('/v1/webhooks/endpoints', { url: base + path })).body.data.id;
    const ctx = { tenantId: biz.tenant_id, environment: 'sandbox' as const };
    const events = [0, 1].map((i) => ({ ctx, eventType: 'customer.created' as const, data: { id: `cus_${i}` } }));
    await t.db.transaction().execute((trx) => recordEvents(trx, events));
    while (await fanOutTick(t.db));
    const recordsBefore = await attemptRecords();

    const jobs = runJobs(
      webhookJobs(
        { db: t.db, sealer: t.sealer },
        { perEndpoint: 2, maxInFlight: 8, retryDelaysMs: [60_000], jitter: 0, allowLoopback: true },
      ),
      t.app.log,
    );
    try {
      await until(
        async () => (await t.db.selectFrom('webhook_attempts').select('id').where('tenant_id', '=', biz.tenant_id).execute()).length === 6,
        async () => undefined,
      );
    } finally {
      await jobs.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    const rows = await t.db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'status', 'attempts', 'last_status_code'])
      .where('tenant_id', '=', biz.tenant_id)
      .execute();
    const of = (path: string) =>
      rows
        .filter((r) => r.endpoint_id === ids[path])
        .map(({ status, attempts, last_status_code }) => ({ status, attempts, last_status_code }));
    expect(of('/ok')).toEqual([0, 1].map(() => ({ status: 'sent', attempts: 1, last_status_code: 200 })));
    expect(of('/fail')).toEqual([0, 1].map(() => ({ status: 'retrying', attempts: 1, last_status_code: 500 })));
    expect(of('/gone')).toEqual([0, 1].map(() => ({ status: 'failed', attempts: 1, last_status_code: 410 })));
    const endpoints = await t.db
      .selectFrom('webhook_endpoints')
      .select(['id', 'status', 'disabled_reason', 'consecutive_failures'])
      .where('tenant_id', '=', biz.tenant_id)
      .execute();
    const endpoint = (path: string) => endpoints.find((e) => e.id === ids[path])!;
    expect(endpoint('/ok')).toMatchObject({ status: 'enabled', consecutive_failures: 0 });
    expect(endpoint('/fail')).toMatchObject({ status: 'enabled', consecutive_failures: 2 });
    expect(endpoint('/gone')).toMatchObject({ status: 'disabled', disabled_reason: 'endpoint_gone' });
    // Fewer writes than attempts: attempts that ended while one was written shared the next.
    const records = (await attemptRecords()) - recordsBefore;
    expect(records).toBeGreaterThan(0);
    expect(records).toBeLessThan(6);
  });

  it("records a run of attempts' outcomes on the circuit as it would one at a time", async () => {
    const [one, run] = await backlog('http://127.0.0.1:9/circuit', 2, 0);
    const circuit = { threshold: 3, openMs: 1000, maxOpenMs: 8000 };
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 12 }),
        fc.nat(6),
        fc.boolean(),
        async (outcomes, failuresBefore, openBefore) => {
          // One transaction: now() is the same for every statement, so the two must agree exactly.
          const [a, b] = await t.db.transaction().execute(async (trx) => {
            await sql`
              update webhook_endpoints set consecutive_failures = ${failuresBefore},
                circuit_open_until = ${openBefore ? sql`now() - interval '1 second'` : sql`null`}
              where id in (${one}, ${run})`.execute(trx);
            for (const success of outcomes) await noteEndpointOutcomes(trx, one!, [success], circuit);
            await noteEndpointOutcomes(trx, run!, outcomes, circuit);
            const { rows } = await sql<{ id: string; consecutive_failures: number; circuit_open_until: Date | null }>`
              select id, consecutive_failures, circuit_open_until from webhook_endpoints where id in (${one}, ${run})`.execute(trx);
            const of = (id: string) => rows.find((r) => r.id === id)!;
            return [of(one!), of(run!)];
          });
          expect({ failures: b.consecutive_failures, until: b.circuit_open_until?.getTime() ?? null }).toEqual({
            failures: a.consecutive_failures,
            until: a.circuit_open_until?.getTime() ?? null,
          });
        },
      ),
      { numRuns: 60 },
    );
  });
});

/** How many gathered attempt records the pool has written so far (the batch-size histogram's count). */
async function attemptRecords(): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric('fsapi_commit_batch_size')!.get();
  return (
    metric.values.find(
      (v) => (v as { metricName?: string }).metricName === 'fsapi_commit_batch_size_count' && v.labels.batch === 'webhook_attempts',
    )?.value ?? 0
  );
}
