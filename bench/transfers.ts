import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { openPostgres } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { reconcile } from '../src/ledger/index.js';
import { createTenant, setSettings } from '../src/modules/tenants/service.js';
import { pgbench, type PgbenchResult } from './pgbench.js';

interface Options {
  adminUrl: string;
  durationSeconds: number;
  only?: 'spread' | 'hot';
}

interface LoadResult {
  ok: number;
  failed: number;
  /** Failures by HTTP status (or "error"): a failed run says why. */
  failures: string;
  perSecond: number;
  p50: number;
  p99: number;
}

const CONNECTIONS = 32;
const ACCOUNTS = 100;

function withDatabase(url: string, name: string) {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(url: string, fn: (c: pg.Client) => Promise<T>) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function startServer(dbUrl: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      DATABASE_URL: dbUrl,
      PORT: String(port),
      ROLE: 'api',
      LOG_LEVEL: 'error',
      DEMO_TENANT: 'false',
      RATE_LIMIT_PER_MINUTE: '100000000',
      DB_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? '24',
      SECRETS_KEY: randomBytes(32).toString('base64'),
      DATA_DIR: mkdtempSync(join(tmpdir(), 'fsapi-bench-')),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
    if (ok) return child;
  }
  child.kill();
  throw new Error('server did not start');
}

/** Stops the server and waits for it to exit, so dropping its database cannot crash it mid-query. */
async function stopServer(server: ChildProcess | undefined) {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((resolve) => server.once('exit', resolve));
  server.kill('SIGCONT');
  server.kill('SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (server.exitCode === null) server.kill('SIGKILL');
}

async function call(base: string, key: string, path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'api-key': key, 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { data: { id: string } };
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function load(base: string, key: string, pick: () => [string, string], seconds: number, rate?: number): Promise<LoadResult> {
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration: seconds,
    ...(rate ? { overallRate: rate } : {}),
    requests: [
      {
        method: 'POST',
        path: '/v1/transfers',
        setupRequest: (req) => {
          const [from, to] = pick();
          return {
            ...req,
            headers: { 'content-type': 'application/json', 'api-key': key, 'idempotency-key': randomUUID() },
            body: JSON.stringify({ source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' }),
          };
        },
      },
    ],
  });
  const failed = result.non2xx + result.errors + result.timeouts;
  const ok = result['2xx'];
  const byStatus = Object.entries(result.statusCodeStats ?? {})
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, v]) => `${code}x${(v as { count: number }).count}`);
  if (result.errors > 0) byStatus.push(`errors x${result.errors}`);
  if (result.timeouts > 0) byStatus.push(`timeouts x${result.timeouts}`);
  return { ok, failed, failures: byStatus.join(' ') || 'none', perSecond: ok / seconds, p50: result.latency.p50, p99: result.latency.p99 };
}

const fmt = (n: number) => n.toFixed(1);

export async function benchTransfers(options: Options): Promise<void> {
  const stamp = `${Date.now().toString(36)}_${process.pid}`;
  const appDb = `fsapi_bench_${stamp}`;
  const pgbDb = `fsapi_pgbench_${stamp}`;
  const seconds = options.durationSeconds;
  await admin(options.adminUrl, async (c) => {
    await c.query(`create database ${appDb}`);
    await c.query(`create database ${pgbDb}`);
  });
  const appUrl = withDatabase(options.adminUrl, appDb);
  let server: ChildProcess | undefined;
  const handle = openPostgres(appUrl, 4);
  try {
    await migrate(handle);
    const tenant = await createTenant(handle.db, 'Bench');
    await setSettings(handle.db, tenant.tenant_id, { rate_limit_per_minute: 100_000_000 });
    const port = await freePort();
    server = await startServer(appUrl, port);
    const base = `http://127.0.0.1:${port}`;
    const key = tenant.sandbox.secret_key;

    const ids: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const account = await call(base, key, '/v1/accounts', { currency: 'NGN', label: `bench-${i}` });
      await call(base, key, `/v1/simulations/accounts/${account.id}/fund`, { amount: '100000000.00' });
      ids.push(account.id);
    }
    const random = () => ids[Math.floor(Math.random() * ids.length)]!;
    const spreadPick = (): [string, string] => {
      const from = random();
      let to = random();
      while (to === from) to = random();
      return [from, to];
    };
    const hot = ids[0]!;
    const hotPick = (): [string, string] => [hot, ids[1 + Math.floor(Math.random() * (ids.length - 1))]!];

    const lines: string[] = [];
    if (options.only !== 'hot') {
      await load(base, key, spreadPick, 3); // warm-up
      const spread = await load(base, key, spreadPick, seconds);
      const half = await load(base, key, spreadPick, Math.max(10, Math.floor(seconds / 2)), Math.max(1, Math.floor(spread.perSecond / 2)));
      server.kill('SIGSTOP'); // keep the CPU for the reference
      const ref = pgbench(withDatabase(options.adminUrl, pgbDb), 10, seconds);
      server.kill('SIGCONT');
      lines.push(...report('spread (100 accounts)', spread, half, ref, 'pgbench -s 10'));
    }
    if (options.only !== 'spread') {
      const hotRun = await load(base, key, hotPick, seconds);
      server.kill('SIGSTOP');
      const ref = pgbench(withDatabase(options.adminUrl, pgbDb), 1, seconds);
      server.kill('SIGCONT');
      lines.push(...report('hot account (every transfer debits one account)', hotRun, undefined, ref, 'pgbench -s 1'));
    }
    const check = await reconcile(handle.db);
    lines.push(`ledger reconcile after the run: ${check.ok ? 'OK' : 'MISMATCH'} (${check.transactions_checked} transactions)`);
    console.log(`\n${lines.join('\n')}\n`);
    if (!check.ok) process.exitCode = 1;
  } catch (err) {
    console.error('benchmark failed:', err);
    process.exitCode = 1;
  } finally {
    await handle.close();
    await stopServer(server);
    await admin(options.adminUrl, async (c) => {
      await c.query(`drop database if exists ${appDb} with (force)`);
      await c.query(`drop database if exists ${pgbDb} with (force)`);
    });
  }
}

function report(title: string, run: LoadResult, half: LoadResult | undefined, ref: PgbenchResult, refName: string): string[] {
  const out = [
    `== ${title}: ${CONNECTIONS} connections, amount 1.00, unique Idempotency-Key per request`,
    `   transfers/s ${fmt(run.perSecond)}  p50 ${run.p50} ms  p99 ${run.p99} ms  (ok ${run.ok}, failed ${run.failed}: ${run.failures})`,
    `   ${refName} -c 16 -j 2: tps ${fmt(ref.tps)}  latency avg ${fmt(ref.latencyAvgMs)} ms`,
    `   ratio transfers/s : pgbench tps = ${(run.perSecond / ref.tps).toFixed(2)}`,
  ];
  if (half) {
    out.push(`   at half load (${fmt(half.perSecond)}/s): p50 ${half.p50} ms  p99 ${half.p99} ms  (failed ${half.failed})`);
  }
  return out;
}
