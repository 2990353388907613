import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCounters, SharedCounters } from '../../src/lib/counters.js';
import { FailureLimiter } from '../../src/dashboard/security.js';
import { addUser } from '../../src/dashboard/service.js';
import { createTenant, rotateKeys, setSettings } from '../../src/modules/tenants/service.js';
import { Agent } from '../dashboard-agent.js';
import { startTestApp, type TestApp } from '../harness.js';
import { get, twoInstancesPerSuite } from '../scale/apps.js';
import { freePort } from '../scale/cluster.js';

/**
 * State that must hold across API processes: key revocation (LISTEN/NOTIFY invalidates every
 * process's key cache) and rate / login limits (Redis counters when REDIS_URL is set).
 */
const REDIS_URL = 'redis://127.0.0.1:6379';
const pgUrl = process.env.DATABASE_URL;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function redisUp(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port: 6379 }, () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
const hasRedis = await redisUp();
const prefix = () => `fsapi-test:${randomUUID()}:`;

/** Polls `check` until it holds; fails when `withinMs` passes first. Returns the time it took. */
async function within(withinMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await sleep(10);
  }
  return Date.now() - started;
}

describe('key cache invalidation in one process (both databases)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('a key rotated with immediate expiry is refused on the very next request, not after a cache period', async () => {
    const biz = await t.tenant();
    const headers = { 'api-key': biz.sandbox.secret_key };
    expect((await t.app.inject({ method: 'GET', url: '/v1/customers', headers })).statusCode).toBe(200);
    await t.db.transaction().execute((trx) => rotateKeys(trx, biz.tenant_id, 'sandbox', 0));
    await within(1000, async () => (await t.app.inject({ method: 'GET', url: '/v1/customers', headers })).statusCode === 401);
  });
});

describe.skipIf(!pgUrl)('key revocation across processes on one PostgreSQL database', () => {
  const pair = twoInstancesPerSuite('kc');
  beforeAll(async () => {
    for (const i of [pair.a, pair.b]) expect(await i.handle.changes!.ready()).toBe(true);
  });

  it('a key rotated through one process (or the CLI) stops working in the other within one second', async () => {
    const biz = await pair.a.handle.db.transaction().execute((trx) => createTenant(trx, 'Rotating Co'));
    const key = biz.sandbox.secret_key;
    expect((await get(pair.a.app, key)).status).toBe(200);
    expect((await get(pair.b.app, key)).status).toBe(200); // now cached in b
    await pair.a.handle.db.transaction().execute((trx) => rotateKeys(trx, biz.tenant_id, 'sandbox', 0));
    await within(1000, async () => (await get(pair.b.app, key)).status === 401);
    expect((await get(pair.a.app, key)).status).toBe(401);
  });

  it('an expiry set by rotation is seen by the other process (and the key ends there on time)', async () => {
    const biz = await pair.a.handle.db.transaction().execute((trx) => createTenant(trx, 'Expiring Co'));
    const key = biz.sandbox.secret_key;
    expect((await get(pair.b.app, key)).status).toBe(200);
    const { old_keys_expire_at } = await pair.a.handle.db.transaction().execute((trx) => rotateKeys(trx, biz.tenant_id, 'sandbox', 1));
    const end = new Date(old_keys_expire_at).getTime();
    await sleep(Math.max(0, end - Date.now()));
    await within(1000, async () => {
      const res = await get(pair.b.app, key);
      return res.status === 401 && res.body.error.code === 'expired_api_key';
    });
  });

  it('after the listener connection is killed, it reconnects and the cache still cannot serve a revoked key', async () => {
    const biz = await pair.a.handle.db.transaction().execute((trx) => createTenant(trx, 'Reconnect Co'));
    const key = biz.sandbox.secret_key;
    expect((await get(pair.b.app, key)).status).toBe(200);
    // Kill every listener connection of this database (both instances').
    const killed = await sql<{ ok: boolean }>`select pg_terminate_backend(pid) as ok from pg_stat_activity
      where datname = current_database() and application_name = 'fsapi-listener'`.execute(pair.a.handle.db);
    expect(killed.rows.length).toBe(2);
    await pair.a.handle.db.transaction().execute((trx) => rotateKeys(trx, biz.tenant_id, 'sandbox', 0));
    await within(1000, async () => (await get(pair.b.app, key)).status === 401);
    // And it is listening again.
    expect(await pair.b.handle.changes!.ready()).toBe(true);
  });

  it('a changed rate-limit quota reaches the other process at once', async () => {
    const biz = await pair.a.handle.db.transaction().execute((trx) => createTenant(trx, 'Quota Co'));
    const key = biz.sandbox.secret_key;
    expect((await get(pair.b.app, key)).headers['ratelimit-policy']).toContain('q=6000');
    await setSettings(pair.a.handle.db, biz.tenant_id, { rate_limit_per_minute: 1000 });
    await within(1000, async () => String((await get(pair.b.app, key)).headers['ratelimit-policy']).includes('q=1000'));
  });
});

describe.skipIf(!hasRedis)('shared counters in Redis', () => {
  it('two processes count into one fixed window', async () => {
    const p = prefix();
    const one = new SharedCounters({ url: REDIS_URL, prefix: p });
    const two = new SharedCounters({ url: REDIS_URL, prefix: p });
    try {
      expect(await one.ready()).toBe(true);
      expect(await two.ready()).toBe(true);
      const now = 1_700_000_000_000;
      expect(await one.hit('t:sandbox', 60_000, now)).toBe(1);
      expect(await two.hit('t:sandbox', 60_000, now + 10)).toBe(2);
      expect(await one.hit('t:sandbox', 60_000, now + 20)).toBe(3);
      expect(await two.hit('t:sandbox', 60_000, now + 60_000)).toBe(1); // next window
      expect(one.shared && two.shared).toBe(true);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('two processes share one failure log: the login limit holds across them', async () => {
    const p = prefix();
    const stores = [new SharedCounters({ url: REDIS_URL, prefix: p }), new SharedCounters({ url: REDIS_URL, prefix: p })];
    for (const s of stores) expect(await s.ready()).toBe(true);
    const [one, two] = stores.map((s) => new FailureLimiter(s, 'login-email', 5, 60_000)) as [FailureLimiter, FailureLimiter];
    try {
      for (let i = 0; i < 3; i++) await one.fail('email:a@example.com');
      for (let i = 0; i < 2; i++) await two.fail('email:a@example.com');
      expect(await one.blockedFor('email:a@example.com')).toBeGreaterThan(0);
      expect(await two.blockedFor('email:a@example.com')).toBeGreaterThan(0);
      expect(await two.blockedFor('email:b@example.com')).toBe(0);
      await one.reset('email:a@example.com');
      expect(await two.blockedFor('email:a@example.com')).toBe(0);
    } finally {
      for (const s of stores) await s.close();
    }
  });

  it('with Redis unreachable, counting goes on in the process and the switch is logged once', async () => {
    const warnings: string[] = [];
    const log = { warn: (_o: object, msg: string) => void warnings.push(msg), info: () => {} };
    const down = new SharedCounters({ url: 'redis://127.0.0.1:1', prefix: prefix(), log });
    try {
      expect(await down.hit('k', 60_000, 1000)).toBe(1);
      expect(await down.hit('k', 60_000, 1001)).toBe(2);
      expect(down.shared).toBe(false);
      expect(warnings).toHaveLength(1);
    } finally {
      await down.close();
    }
  });
});

const redisServer = '/usr/bin/redis-server';
describe.skipIf(!existsSync(redisServer))("counters when Redis goes away and comes back (a Redis of the test's own)", () => {
  it('count per process while it is down (logged once), and shared again once it is back', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const start = async () => {
      const child = spawn(redisServer, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: 'ignore',
      });
      const probe = new SharedCounters({ url: `redis://127.0.0.1:${port}` });
      expect(await probe.ready(10_000)).toBe(true);
      await probe.close();
      return child;
    };
    const log: string[] = [];
    let redis = await start();
    const counters = new SharedCounters({
      url: `redis://127.0.0.1:${port}`,
      prefix: prefix(),
      log: { warn: (_o, msg) => void log.push(`warn: ${msg}`), info: (_o, msg) => void log.push(`info: ${msg}`) },
    });
    try {
      expect(await counters.ready()).toBe(true);
      expect(await counters.hit('k', 60_000, 0)).toBe(1);
      expect(await counters.hit('k', 60_000, 1)).toBe(2);
      redis.kill('SIGKILL');
      await new Promise((r) => redis.once('exit', r));
      // Down: the requests are counted here (a fresh local window), never failed.
      expect(await counters.hit('k', 60_000, 2)).toBe(1);
      expect(await counters.hit('k', 60_000, 3)).toBe(2);
      expect(counters.shared).toBe(false);
      expect(log.filter((l) => l.startsWith('warn'))).toHaveLength(1);
      redis = await start();
      expect(await counters.ready(10_000)).toBe(true);
      expect(await counters.hit('k2', 60_000, 4)).toBe(1);
      expect(counters.shared).toBe(true);
      expect(log.at(-1)).toMatch(/^info: Redis is back/);
    } finally {
      await counters.close();
      redis.kill('SIGKILL');
    }
  });
});

describe('per-process counters (no REDIS_URL)', () => {
  it('count each process on its own', async () => {
    const one = new MemoryCounters();
    const two = new MemoryCounters();
    expect(await one.hit('k', 60_000, 0)).toBe(1);
    expect(await two.hit('k', 60_000, 0)).toBe(1);
    expect(one.shared).toBe(false);
  });
});

describe.skipIf(!pgUrl || !hasRedis)('rate and login limits across two API processes with REDIS_URL', () => {
  const pair = twoInstancesPerSuite('rl', { REDIS_URL, REDIS_KEY_PREFIX: prefix() });

  it('a quota of 6 per minute is 6 in total, whichever process answers', async () => {
    const biz = await pair.a.handle.db.transaction().execute((trx) => createTenant(trx, 'Limited Co'));
    await setSettings(pair.a.handle.db, biz.tenant_id, { rate_limit_per_minute: 6 });
    const key = biz.sandbox.secret_key;
    // Not across a minute boundary (the window would restart mid-test).
    if (Date.now() % 60_000 > 55_000) await sleep(60_000 - (Date.now() % 60_000) + 50);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await get(i % 2 === 0 ? pair.a.app : pair.b.app, key)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
  });

  it('five failed logins spread over both processes lock the email on both', async () => {
    const biz = await pair.a.handle.db.transaction().execute((trx) => createTenant(trx, 'Login Co'));
    const email = `owner+${randomUUID().slice(0, 8)}@example.com`;
    await addUser(pair.a.handle.db, biz.tenant_id, { email, password: 'correct horse battery' });
    const agents = [new Agent({ app: pair.a.app } as never), new Agent({ app: pair.b.app } as never)];
    for (const agent of agents) await agent.get('/dashboard/login');
    for (let i = 0; i < 5; i++) {
      expect((await agents[i % 2]!.post('/dashboard/login', { email, password: 'wrong password' })).statusCode).toBe(401);
    }
    for (const agent of agents)
      expect((await agent.post('/dashboard/login', { email, password: 'correct horse battery' })).statusCode).toBe(429);
  });
});
