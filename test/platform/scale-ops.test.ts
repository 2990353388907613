import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { checkConnectionBudget } from '../../src/db/budget.js';
import { observeBatchStart } from '../../src/lib/metrics.js';
import { checkDatabaseBudget } from '../../src/runtime.js';
import { startTestApp, type TestApp } from '../harness.js';

/** The operator's side of scaling out: the connection budget at start, and /metrics per process. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('connection budget', () => {
  it.skipIf(!process.env.DATABASE_URL)('refuses a deployment whose pools cannot fit max_connections, with the figures', async () => {
    const verdict = await checkConnectionBudget(t.db, { poolSize: 20, listener: true, processes: 1000, pooled: false });
    expect(verdict.level).toBe('error');
    expect(verdict.message).toMatch(
      /1000 processes x DB_POOL_SIZE=20 \+ 1 listener = 21 per process need 21000 connections, but PostgreSQL allows \d+/,
    );
    const config = loadConfig({}, { DATABASE_URL: 'postgres://unused', DB_CLUSTER_PROCESSES: 1000, ROLE: 'api' });
    const closed: string[] = [];
    await expect(checkDatabaseBudget(config, { ...t.handle, close: async () => void closed.push('closed') })).rejects.toThrow(
      /Connection budget exceeded/,
    );
    expect(closed).toEqual(['closed']);
  });

  it.skipIf(!process.env.DATABASE_URL)('accepts one that fits, and behind a pooler counts only the listeners', async () => {
    const small = await checkConnectionBudget(t.db, { poolSize: 2, listener: true, processes: 4, pooled: false });
    expect(small).toMatchObject({ level: 'ok', figures: { perProcess: 3, planned: 12 } });
    const pooled = await checkConnectionBudget(t.db, { poolSize: 50, listener: true, processes: 40, pooled: true });
    expect(pooled).toMatchObject({ level: 'ok', figures: { perProcess: 1, planned: 40 } });
    const workers = await checkConnectionBudget(t.db, { poolSize: 10, listener: false, processes: 2, pooled: false });
    expect(workers.figures.perProcess).toBe(10);
  });

  it('is not checked on PGlite (one process, one connection)', async () => {
    if (t.dbKind !== 'pglite') return;
    const config = loadConfig({}, { DB_CLUSTER_PROCESSES: 100000 });
    await expect(checkDatabaseBudget(config, t.handle)).resolves.toBeUndefined();
  });
});

describe('/metrics of a process', () => {
  it('carries request counts and latencies by route, queue depth and age, batch sizes and pool usage', async () => {
    const biz = await t.tenant();
    await t.request('GET', '/v1/customers', undefined, { key: biz.sandbox.secret_key });
    observeBatchStart(7, 3, false);
    const res = await t.request('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/http_requests_total\{method="GET",route="\/v1\/customers",status="200"\} [1-9]/);
    expect(res.text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/v1\/customers",status="200"\} [1-9]/);
    // Each series counts its own requests (the labelled children are kept per method, status, route).
    const count = async (status: number) => {
      const text = (await t.request('GET', '/metrics')).text;
      const line = (name: string) =>
        Number(new RegExp(`^${name}\\{method="GET",route="/v1/customers",status="${status}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      return { requests: line('http_requests_total'), durations: line('http_request_duration_seconds_count') };
    };
    const [ok, refused] = [await count(200), await count(401)];
    for (let i = 0; i < 3; i++) await t.request('GET', '/v1/customers', undefined, { key: biz.sandbox.secret_key });
    await t.request('GET', '/v1/customers', undefined, { key: 'sk_sandbox_not_a_key' });
    expect(await count(200)).toEqual({ requests: ok.requests + 3, durations: ok.durations + 3 });
    expect(await count(401)).toEqual({ requests: refused.requests + 1, durations: refused.durations + 1 });
    for (const queue of ['webhook_deliveries', 'webhook_fanout', 'rail_settlement', 'collection_expiry', 'card_authorization_expiry']) {
      expect(res.text).toContain(`fsapi_job_queue_depth{queue="${queue}"}`);
      expect(res.text).toContain(`fsapi_job_queue_oldest_age_seconds{queue="${queue}"}`);
    }
    expect(res.text).toMatch(/fsapi_commit_batch_size_sum\{batch="transfers"\} [1-9]/);
    expect(res.text).toContain('fsapi_webhook_delivery_lag_seconds');
    if (t.dbKind === 'postgres') expect(res.text).toMatch(/fsapi_db_pool_connections\{state="max"\} 10/);
  });
});
