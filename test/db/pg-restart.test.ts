import { execFileSync, spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { call, clusterPort, startServer, waitExit, type HttpResult, type ServerProcess } from '../server-process.js';

/**
 * Issue #15: a PostgreSQL restart under load must fail only the requests that used the dropped
 * connections (503 in the envelope, with Retry-After), never the process, and lose no write the
 * server acknowledged. The test makes a PostgreSQL cluster of its own (never the shared one),
 * runs the real server process on it, and restarts the cluster twice under concurrent load: once
 * the polite way (fast shutdown: every backend gets 57P01) and once as a crash (immediate).
 */
const hasCluster = spawnSync('pg_createcluster', ['--help'], { stdio: 'ignore' }).error === undefined;
const asRoot = process.getuid?.() === 0;
const enabled = Boolean(process.env.DATABASE_URL) && hasCluster && asRoot;
if (process.env.DATABASE_URL && !enabled) console.warn('pg_createcluster missing or not root: PostgreSQL restart test skipped');

const VERSION = '15';
const cluster = `fsapi_restart_${process.pid}`;
let port = 0;
let server: ServerProcess | undefined;

function ctl(...args: string[]) {
  execFileSync('pg_ctlcluster', args, { stdio: 'pipe' });
}

beforeAll(async () => {
  if (!enabled) return;
  port = await clusterPort();
  execFileSync('pg_createcluster', [VERSION, cluster, '-p', String(port), '--', '--auth=trust', '--no-sync'], { stdio: 'pipe' });
  ctl(VERSION, cluster, 'start');
  const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
  await admin.connect();
  await admin.query('create database app');
  await admin.end();
}, 60_000);

afterAll(async () => {
  if (!enabled) return;
  if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  spawnSync('pg_dropcluster', [VERSION, cluster, '--stop'], { stdio: 'ignore' });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!enabled)('PostgreSQL restart under load', () => {
  it('keeps the process alive, answers 503 in the envelope, recovers, and loses no acknowledged write', async () => {
    const url = `postgres://postgres@127.0.0.1:${port}/app`;
    server = await startServer({ DATABASE_URL: url, DEMO_TENANT: 'true', DB_POOL_SIZE: '8' });
    const { base, demoKey: key } = server;
    const post = (path: string, body: unknown, idem: string) => call(base, 'POST', path, key, body, idem);

    const must = (r: HttpResult) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data;
    };
    const source = must(await post('/v1/accounts', { currency: 'NGN', label: 'source' }, newId())).id as string;
    const sink = must(await post('/v1/accounts', { currency: 'NGN', label: 'sink' }, newId())).id as string;
    must(await post(`/v1/simulations/accounts/${source}/fund`, { amount: '100000.00' }, newId()));

    const acknowledged = { transfers: [] as string[], customers: [] as string[] };
    const failures: HttpResult[] = [];
    const unavailable: HttpResult[] = [];
    let stop = false;
    let inProgress = 0;

    /** One client: a write, retried with the same key while the server says 503 (or is unreachable). */
    const client = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const idem = newId();
        const isTransfer = (n + i) % 2 === 0;
        const path = isTransfer ? '/v1/transfer' : '/v1/customers';
        const body = isTransfer
          ? {
              source: { source_type: 'internal_account', id: source },
              destination: { destination_type: 'internal_account', id: sink },
              amount: '1.00',
            }
          : {
              first_name: 'Ada',
              last_name: 'Restart',
              email: `ada+${idem}@example.com`,
              phone: '+2348012345678',
              type: 'individual',
              gender: 'female',
              date_of_birth: '1990-01-15',
              address: { address_line1: '1 Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
            };
        for (let attempt = 0; attempt < 200; attempt++) {
          const r = await post(path, body, idem);
          if (r.status === 200 || r.status === 201) {
            const id = isTransfer ? r.body.data.id : (r.body.data.id ?? r.body.data.customer?.id);
            (isTransfer ? acknowledged.transfers : acknowledged.customers).push(id as string);
            break;
          }
          if (r.status === 503) unavailable.push(r);
          else if (r.status === 409 && r.body?.error?.code === 'idempotency_request_in_progress') {
            inProgress++; // the first attempt's claim is still being released: retry
          } else failures.push(r);
          await sleep(100);
        }
      }
    };

    const load = Promise.all(Array.from({ length: 12 }, (_, n) => client(n)));
    await sleep(1500);
    ctl(VERSION, cluster, 'restart', '-m', 'fast'); // every backend: 57P01 admin shutdown
    await sleep(2500);
    ctl(VERSION, cluster, 'stop', '-m', 'immediate'); // a crash: connections just drop
    await sleep(300);
    ctl(VERSION, cluster, 'start');
    await sleep(2500);
    const countBefore = acknowledged.transfers.length + acknowledged.customers.length;
    await sleep(1500);
    stop = true;
    const stopped = Date.now();
    await load;
    const drain = Date.now() - stopped;

    // The process survived both restarts and serves again.
    expect(server.child.exitCode, server.output()).toBeNull();
    expect((await call(base, 'GET', '/readyz', key)).status).toBe(200);
    expect(acknowledged.transfers.length + acknowledged.customers.length).toBeGreaterThan(countBefore); // writes after the restarts
    // Every failure was a 503 in the envelope with Retry-After; nothing else (no 500, no reset).
    expect(failures.map((f) => [f.status, JSON.stringify(f.body).slice(0, 200)])).toEqual([]);
    for (const r of unavailable) {
      expect(r.body.error.code).toBe('service_unavailable');
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
    }

    // No acknowledged write is lost.
    const db = new pg.Client({ connectionString: url });
    await db.connect();
    try {
      const t = await db.query('select count(*)::int as n from transfers where id = any($1::uuid[])', [acknowledged.transfers]);
      const c = await db.query('select count(*)::int as n from customers where id = any($1::uuid[])', [acknowledged.customers]);
      expect(t.rows[0].n).toBe(acknowledged.transfers.length);
      expect(c.rows[0].n).toBe(acknowledged.customers.length);
      expect(new Set(acknowledged.transfers).size).toBe(acknowledged.transfers.length);
      const sinkBalance = await call(base, 'GET', `/v1/accounts/${sink}`, key);
      expect(sinkBalance.body.data.balance).toBe(`${acknowledged.transfers.length}.00`);
    } finally {
      await db.end();
    }
    console.log(
      `PostgreSQL restart under load: ${acknowledged.transfers.length} transfers + ${acknowledged.customers.length} customers acknowledged, ` +
        `${unavailable.length} answers 503, ${inProgress} answers 409 in progress, 0 lost; load drained ${drain} ms after it stopped`,
    );

    server.child.kill('SIGTERM');
    expect((await waitExit(server, 15_000)).killed).toBe(false);
  }, 300_000);
});
