import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/workers/index.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';
import { sleep, startReceiver, until } from './receiver.js';

/**
 * Issue #15: webhook delivery isolates endpoints. One business's endpoint fails half its requests
 * and hangs on a tenth; another business's endpoint is healthy. With the production retry
 * schedule (first retry 5 s ± 10 %), the healthy deliveries never wait behind a hanging one, and
 * the flaky endpoint's first retries are scheduled 5 s ± 10 % after the failed attempt ended.
 * Both are read from the recorded attempts (when each attempt was due, started and ended).
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const TIMEOUT_MS = 3000;

interface AttemptTimes {
  delivery_id: string;
  endpoint_id: string;
  attempt: number;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  started_at: Date | null;
  scheduled_at: Date | null;
  created_at: Date;
  event_created_at: Date;
}

async function attemptsOf(endpointIds: string[]): Promise<AttemptTimes[]> {
  const { rows } = await sql<AttemptTimes>`
    select a.delivery_id, a.endpoint_id, a.attempt, a.status_code, a.error, a.duration_ms, a.started_at, a.scheduled_at,
      a.created_at, ev.created_at as event_created_at
    from webhook_attempts a join events ev on ev.id = a.event_id
    where a.endpoint_id in (${sql.join(endpointIds)}) order by a.delivery_id, a.attempt`.execute(t.db);
  return rows;
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

describe('webhook delivery isolation', () => {
  it('a flaky, hanging endpoint delays no one else; first retries follow 5 s ± 10 %', async () => {
    // Fails every second request, hangs on every tenth (never answers: the attempt times out).
    const flaky = await startReceiver((_r, n) => (n % 10 === 1 ? 'hang' : n % 2 === 0 ? { status: 500 } : { status: 200 }));
    const healthy = await startReceiver();
    const flakyApi = clientFor(t, (await t.tenant('Flaky Receiver Co')).sandbox.secret_key);
    const healthyApi = clientFor(t, (await t.tenant('Healthy Receiver Co')).sandbox.secret_key);
    const flakyEp = (await flakyApi.post('/v1/webhooks/endpoints', { url: flaky.url })).body.data.id as string;
    const healthyEp = (await healthyApi.post('/v1/webhooks/endpoints', { url: healthy.url })).body.data.id as string;
    const workers = startWorkers(
      { config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log },
      // The production schedule (first retry after 5 s, ± 10 % jitter); a short timeout keeps the test bounded.
      { webhooks: { timeoutMs: TIMEOUT_MS } },
    );
    const EVENTS = 16;
    try {
      for (let i = 0; i < EVENTS; i++) {
        await flakyApi.post('/v1/customers', johnDoe());
        await healthyApi.post('/v1/customers', johnDoe());
        await sleep(50);
      }
      // Every healthy event delivered, and every flaky delivery that failed its first attempt retried.
      await until(
        async () => {
          const rows = await attemptsOf([flakyEp, healthyEp]);
          const healthyDone = rows.filter((r) => r.endpoint_id === healthyEp && r.status_code === 200).length >= EVENTS;
          const flakyFirst = rows.filter((r) => r.endpoint_id === flakyEp && r.attempt === 1);
          const failedFirst = flakyFirst.filter((r) => r.status_code !== 200);
          const retried = new Set(rows.filter((r) => r.endpoint_id === flakyEp && r.attempt === 2).map((r) => r.delivery_id));
          return healthyDone && flakyFirst.length >= EVENTS && failedFirst.every((r) => retried.has(r.delivery_id));
        },
        () => sleep(200),
        40_000,
      );
    } finally {
      await workers.stop();
      await flaky.close();
      await healthy.close();
    }

    const rows = await attemptsOf([flakyEp, healthyEp]);
    for (const r of rows) {
      expect(r.started_at).not.toBeNull();
      expect(r.scheduled_at).not.toBeNull();
    }
    // Healthy: every first attempt started before any hanging request could have ended, so none
    // waited behind the flaky endpoint (a batch barrier makes them wait a whole timeout).
    const healthyFirst = rows.filter((r) => r.endpoint_id === healthyEp && r.attempt === 1);
    expect(healthyFirst).toHaveLength(EVENTS);
    const latency = healthyFirst.map((r) => r.started_at!.getTime() - r.event_created_at.getTime());
    expect(Math.max(...latency)).toBeLessThan(TIMEOUT_MS);
    // The flaky endpoint really failed and hung.
    const flakyFirst = rows.filter((r) => r.endpoint_id === flakyEp && r.attempt === 1);
    expect(flakyFirst.some((r) => r.error?.startsWith('timed out'))).toBe(true);
    expect(flakyFirst.some((r) => r.status_code === 500)).toBe(true);
    // First retries: due 5 s ± 10 % after the failed attempt ended, and started when due.
    const retryDelays: number[] = [];
    for (const second of rows.filter((r) => r.endpoint_id === flakyEp && r.attempt === 2)) {
      const first = rows.find((r) => r.delivery_id === second.delivery_id && r.attempt === 1)!;
      const firstEnded = first.started_at!.getTime() + first.duration_ms;
      const due = second.scheduled_at!.getTime() - firstEnded;
      expect(due).toBeGreaterThanOrEqual(4500 - 5);
      expect(due).toBeLessThanOrEqual(5500 + 5);
      expect(second.started_at!.getTime()).toBeGreaterThanOrEqual(second.scheduled_at!.getTime());
      retryDelays.push(second.started_at!.getTime() - firstEnded);
    }
    expect(retryDelays.length).toBeGreaterThan(EVENTS / 3);
    console.log(
      `webhook isolation: healthy first attempt p50 ${pct(latency, 50)} ms max ${Math.max(...latency)} ms; ` +
        `flaky first retry after p50 ${pct(retryDelays, 50)} ms (min ${Math.min(...retryDelays)}, max ${Math.max(...retryDelays)})`,
    );
  }, 90_000);

  it('a dead endpoint backs off behind its circuit and holds no worker', async () => {
    const dead = await startReceiver(() => 'hang');
    const healthy = await startReceiver();
    const deadApi = clientFor(t, (await t.tenant('Dead Receiver Co')).sandbox.secret_key);
    const healthyApi = clientFor(t, (await t.tenant('Live Receiver Co')).sandbox.secret_key);
    const deadEp = (await deadApi.post('/v1/webhooks/endpoints', { url: dead.url })).body.data.id as string;
    const healthyEp = (await healthyApi.post('/v1/webhooks/endpoints', { url: healthy.url })).body.data.id as string;
    const circuit = { circuitThreshold: 2, circuitOpenMs: 2000 };
    const workers = startWorkers(
      { config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log },
      // Two slots in all, one per endpoint: without the circuit and the per-endpoint limit the dead
      // endpoint would hold every slot.
      {
        webhooks: {
          timeoutMs: 3000,
          retryDelaysMs: [50, 50, 50, 50, 50, 50, 50, 50],
          jitter: 0,
          maxInFlight: 2,
          perEndpoint: 1,
          ...circuit,
        },
      },
    );
    const EVENTS = 6;
    try {
      for (let i = 0; i < EVENTS; i++) await deadApi.post('/v1/customers', johnDoe());
      for (let i = 0; i < 2 * EVENTS; i++) {
        await healthyApi.post('/v1/customers', johnDoe());
        await sleep(400);
      }
      await until(
        async () => (await attemptsOf([healthyEp])).filter((r) => r.status_code === 200).length >= 2 * EVENTS,
        () => sleep(100),
        15_000,
      );
      await until(
        async () => (await attemptsOf([deadEp])).length >= 3,
        () => sleep(100),
        15_000,
      );
    } finally {
      await workers.stop();
      await dead.close();
      await healthy.close();
    }
    const healthyRows = (await attemptsOf([healthyEp])).filter((r) => r.attempt === 1);
    const latency = healthyRows.map((r) => r.started_at!.getTime() - r.event_created_at.getTime());
    // Never behind a hanging request of the dead endpoint (that would cost its 3 s timeout).
    expect(Math.max(...latency), JSON.stringify(latency)).toBeLessThan(3000);
    // The dead endpoint: attempts one at a time, and after 2 failures in a row a pause of at
    // least the open circuit's 2 s before the next probe (not the 50 ms retry schedule).
    const deadRows = (await attemptsOf([deadEp])).sort((a, b) => a.started_at!.getTime() - b.started_at!.getTime());
    const gaps = deadRows.slice(1).map((r, i) => r.started_at!.getTime() - (deadRows[i]!.started_at!.getTime() + deadRows[i]!.duration_ms));
    expect(gaps.every((g) => g >= -5)).toBe(true); // one in flight at a time (perEndpoint: 1)
    expect(deadRows.length).toBeGreaterThanOrEqual(3);
    expect(gaps[1]!).toBeGreaterThanOrEqual(2000 - 5);
    const ep = await t.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', deadEp).executeTakeFirstOrThrow();
    expect(ep.consecutive_failures).toBeGreaterThanOrEqual(2);
    expect(ep.circuit_open_until).not.toBeNull();
    expect(ep.status).toBe('enabled');
    // Far fewer attempts than a 50 ms schedule would have made in the same time.
    const span = deadRows[deadRows.length - 1]!.started_at!.getTime() - deadRows[0]!.started_at!.getTime();
    expect(deadRows.length).toBeLessThan(span / 3050 + 3);
  }, 40_000);
});
