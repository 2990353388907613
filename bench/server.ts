import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { openPGlite, openPostgres, type DatabaseHandle } from '../src/db/client.js';
import { loadConfig, type Config } from '../src/config.js';
import { migrate } from '../src/db/migrate.js';
import { createTenant, setSettings } from '../src/modules/tenants/service.js';
import { VIA_PROXY } from './load.js';

const ROOT = join(import.meta.dirname, '..');

/** The node flags of `npm start` (`node <flags> dist/main.js`): the bench serves as production does. */
export const START_FLAGS: string[] = (() => {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = scripts.start.split(/\s+/);
  return words.slice(1, words.indexOf('dist/main.js'));
})();

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function admin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** The app's configuration for code the bench calls in its own process (no database URL of its own). */
export function appConfig(): Config {
  return loadConfig({ ...process.env, DATABASE_URL: undefined, PROFILE: 'development' });
}

/** The production build (tsc to dist/): the bench measures what `npm start` serves. */
export function build(): void {
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

export interface Server {
  base: string;
  process: ChildProcess;
  dataDir: string;
  /** SIGSTOP/SIGCONT: a paused server leaves the CPU to a reference run. */
  pause(): void;
  resume(): void;
  /** Peak resident set size so far (VmHWM), in MiB; NaN where /proc is missing. */
  peakRssMiB(): number;
  /** CPU time the server process has used so far (user + system), in ms; NaN where /proc is missing. */
  cpuMs(): number;
  stop(): Promise<void>;
}

/**
 * A build named on an A/B script's command line, `name=path[:ENV=value...]` (a directory holding
 * dist/, and settings of its server only), started on `dbUrl`.
 */
export async function startBuild(spec: string, dbUrl: string, poolSize: number): Promise<{ name: string; server: Server }> {
  const [dir, ...settings] = spec.slice(spec.indexOf('=') + 1).split(':');
  const env = Object.fromEntries(settings.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]));
  return { name: spec.split('=')[0]!, server: await startServer({ root: resolve(dir!), dbUrl, poolSize, env }) };
}

/**
 * Paused servers resumed and given time to do what they could not while stopped (V8's idle-time
 * garbage collection, their timers): a load right after a resume met a 300-800 ms stall; none
 * after 3 s.
 */
export async function resumed(...servers: Server[]): Promise<void> {
  servers.forEach((s) => s.resume());
  await new Promise((r) => setTimeout(r, 3000));
}

/**
 * Starts `node dist/main.js` (API only, no workers) on PostgreSQL (`dbUrl`) or, without one, on
 * PGlite in `dataDir`. Requests are logged as in production (LOG_LEVEL info, to a pipe we drain).
 */
export async function startServer(options: {
  dbUrl?: string;
  dataDir?: string;
  poolSize: number;
  /** Settings of this server only (e.g. REQUEST_LOG: 'off'). */
  env?: Record<string, string>;
  /** The build to start (a worktree holding dist/; default: this one), for the A/B scripts. */
  root?: string;
  /** Node flags of this server only, after START_FLAGS and BENCH_SERVER_ARGS. */
  nodeArgs?: string[];
}): Promise<Server> {
  const port = await freePort();
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'fsapi-bench-'));
  const { DATABASE_URL: _ignored, NODE_OPTIONS: _opts, ...env } = process.env;
  // BENCH_SERVER_ARGS: more node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it.
  const nodeArgs = [...START_FLAGS, ...(process.env.BENCH_SERVER_ARGS ?? '').split(' ').filter(Boolean), ...(options.nodeArgs ?? [])];
  const child = spawn(process.execPath, [...nodeArgs, 'dist/main.js'], {
    cwd: options.root ?? ROOT,
    env: {
      ...env,
      ...(options.dbUrl ? { DATABASE_URL: options.dbUrl } : {}),
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ROLE: 'api',
      PROFILE: 'production',
      TRUSTED_PROXIES: '127.0.0.1',
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
      DEMO_TENANT: 'false',
      RATE_LIMIT_PER_MINUTE: '1000000',
      DB_POOL_SIZE: String(options.poolSize),
      SECRETS_KEY: randomBytes(32).toString('base64'),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout!.resume(); // drain the request log
  const base = `http://127.0.0.1:${port}`;
  const server: Server = {
    base,
    process: child,
    dataDir,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    peakRssMiB() {
      try {
        const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
        return kb ? Number(kb) / 1024 : NaN;
      } catch {
        return NaN;
      }
    },
    cpuMs: () => processCpuMs(child.pid!).own,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 100));
    const ok = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return server;
  }
  await server.stop();
  throw new Error('server did not start within 120 s');
}

/** Clock ticks per second of /proc/<pid>/stat's CPU times (getconf CLK_TCK; 100 on Linux). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * A process's CPU time so far, in ms, from one read of /proc/<pid>/stat: its own (utime + stime,
 * fields 14 and 15) and that of its children it has waited for (cutime + cstime, fields 16 and
 * 17); NaN when unreadable.
 */
function processCpuMs(pid: number): { own: number; reaped: number; user: number; system: number } {
  try {
    // The command name (field 2) may hold spaces: the fields after it start past its ')'.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const ms = (...at: number[]) => (at.reduce((sum, i) => sum + Number(fields[i]), 0) * 1000) / TICKS_PER_SECOND;
    return { own: ms(11, 12), reaped: ms(13, 14), user: ms(11), system: ms(12) };
  } catch {
    return { own: NaN, reaped: NaN, user: NaN, system: NaN };
  }
}

/** CPU time of this process's children that have ended and been waited for (pgbench runs), in ms. */
export function endedChildrenCpuMs(): number {
  return processCpuMs(process.pid).reaped;
}

/**
 * What postgresCpuMs counts once scoped: the background processes of the bench's cluster (WAL
 * writer, checkpointer, background writer: their pids from pg_stat_activity) and every backend
 * whose process title names one of the bench's databases (`fsapi_bench_<stamp>_…`).
 */
let scope: { aux: number[]; title: string } | undefined;

/** Counts only the bench's cluster and databases from now on (see postgresCpuMs). */
export async function scopePostgresCpu(adminUrl: string, databasePrefix: string): Promise<void> {
  const aux = await admin(adminUrl, (c) =>
    c.query<{ pid: number }>(`select pid from pg_stat_activity where backend_type <> 'client backend' and pid <> pg_backend_pid()`),
  );
  scope = { aux: aux.rows.map((r) => r.pid), title: databasePrefix };
}

function postgresPids(): number[] {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      if (scope && !scope.aux.includes(Number(pid)) && !readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(scope.title)) continue;
    } catch {
      continue; // ended meanwhile
    }
    found.push(Number(pid));
  }
  return found;
}

/**
 * CPU time PostgreSQL has used so far, in ms (NaN without /proc). Unscoped: every PostgreSQL
 * process of this machine and the backends that have ended (their time is in the postmaster's
 * reaped children's). Scoped (scopePostgresCpu): only the bench's cluster's background processes
 * and the backends of the bench's databases, so other clusters and other users' databases on a
 * shared machine do not count; a backend of ours that ends during a window loses its time there
 * (the server's pool keeps its connections during a load).
 */
export function postgresCpuMs(): number {
  let total = 0;
  let seen = 0;
  for (const pid of postgresPids()) {
    // Only a postmaster has children: a backend's reaped time is 0.
    const { own, reaped } = processCpuMs(pid);
    const ms = own + (scope ? 0 : reaped);
    if (Number.isFinite(ms)) {
      total += ms;
      seen++;
    }
  }
  return seen > 0 ? total : NaN;
}

/** PostgreSQL's CPU over a window, in ms, split: its backends' user and system time, and the cluster's own processes' (WAL writer, checkpointer, …). */
export interface PostgresCpuParts {
  backendsUser: number;
  backendsSystem: number;
  cluster: number;
}

/**
 * PostgreSQL's CPU over a window in which backends start and end (a pgbench run): every
 * process postgresCpuMs counts is sampled every `everyMs`, and each counts from its first sample
 * (or from the start) to its last, so a backend that ended keeps what it used up to its last
 * sample. Returns the stop function, which gives the ms used; after it, `parts()` gives the same
 * ms split (a backend is any process the scope did not find at its start).
 */
export function trackPostgresCpu(everyMs = 200): (() => number) & { parts: () => PostgresCpuParts } {
  type Times = { user: number; system: number };
  const first = new Map<number, Times>();
  const last = new Map<number, Times>();
  const sample = (initial: boolean) => {
    for (const pid of postgresPids()) {
      const { user, system } = processCpuMs(pid);
      if (!Number.isFinite(user) || !Number.isFinite(system)) continue;
      if (!first.has(pid)) first.set(pid, initial ? { user, system } : { user: 0, system: 0 });
      last.set(pid, { user, system });
    }
  };
  sample(true);
  const timer = setInterval(() => sample(false), everyMs);
  timer.unref(); // a window never closed must not keep the bench running
  let parts: PostgresCpuParts = { backendsUser: 0, backendsSystem: 0, cluster: 0 };
  const stop = () => {
    clearInterval(timer);
    sample(false);
    parts = { backendsUser: 0, backendsSystem: 0, cluster: 0 };
    for (const [pid, { user, system }] of last) {
      const from = first.get(pid) ?? { user: 0, system: 0 };
      if (scope?.aux.includes(pid)) parts.cluster += user - from.user + system - from.system;
      else {
        parts.backendsUser += user - from.user;
        parts.backendsSystem += system - from.system;
      }
    }
    return parts.backendsUser + parts.backendsSystem + parts.cluster;
  };
  return Object.assign(stop, { parts: () => parts });
}

/** A migrated database with one business whose rate limit is out of the way; returns its secret key. */
export async function prepareDatabase(handle: DatabaseHandle): Promise<{ tenantId: string; key: string }> {
  await migrate(handle);
  const tenant = await handle.db.transaction().execute((trx) => createTenant(trx, 'Bench'));
  await setSettings(handle.db, tenant.tenant_id, {
    rate_limit_per_minute: 1_000_000,
    // Customers' transfers are judged against these (customerAccounts): high enough never to refuse one.
    kyc_limits: { basic: { NGN: { per_transaction: '1000000.00', daily: '1000000000.00' } } },
  });
  return { tenantId: tenant.tenant_id, key: tenant.sandbox.secret_key };
}

/** A PGlite data directory prepared before its server starts (one process per data directory). */
export async function preparePGlite(dataDir: string) {
  const handle = await openPGlite({ dataDir: join(dataDir, 'pglite') });
  try {
    return await prepareDatabase(handle);
  } finally {
    await handle.close();
  }
}

async function call(base: string, key: string, path: string, body: unknown): Promise<{ id: string }> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { ...VIA_PROXY, 'content-type': 'application/json', 'api-key': key, 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { data: { id: string } };
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** `count` NGN accounts of the business, each funded through the API; returns their ids. */
export function fundedAccounts(base: string, key: string, count: number): Promise<string[]> {
  return openAccounts(base, key, count, 'NGN', (id) => call(base, key, `/v1/simulations/accounts/${id}/fund`, { amount: '100000000.00' }));
}

/** `count` customers with approved KYC (sandbox), each with a funded NGN account; returns the accounts' ids. */
export async function customerAccounts(base: string, key: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const customer = await call(base, key, '/v1/customers', {
      first_name: 'Ada',
      last_name: `Bench${i}`,
      email: `bench-${i}-${randomUUID().slice(0, 8)}@example.com`,
      phone: '+2348012345678',
      type: 'individual',
      gender: 'female',
      date_of_birth: '1990-01-15',
      address: { address_line1: '12 Marina Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
    });
    await call(base, key, `/v1/simulations/kyc/${customer.id}`, { outcome: 'approved', level: 'basic' });
    const account = await call(base, key, '/v1/accounts', { currency: 'NGN', label: `bench-customer-${i}`, customer_id: customer.id });
    await call(base, key, `/v1/simulations/accounts/${account.id}/fund`, { amount: '100000000.00' });
    ids.push(account.id);
  }
  return ids;
}

/** `count` accounts of the business in `currency`, ten opened at a time, `then` run on each; returns their ids. */
export async function openAccounts(
  base: string,
  key: string,
  count: number,
  currency: string,
  then: (id: string) => Promise<unknown> = async () => {},
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
        const account = await call(base, key, '/v1/accounts', { currency, label: `bench-${currency}-${i + j}` });
        await then(account.id);
        return account.id;
      }),
    );
    ids.push(...batch);
  }
  return ids;
}

export async function post(base: string, key: string, path: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { ...VIA_PROXY, 'content-type': 'application/json', 'api-key': key, 'idempotency-key': randomUUID() },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data: unknown; error: unknown } };
}

/** One element of `list`, at random. */
export const anyOf = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;

/** Random pairs of two different ids of `ids`: who pays whom in a load. */
export function randomPairs(ids: string[]): () => [string, string] {
  return () => {
    const from = anyOf(ids);
    let to = from;
    while (to === from) to = anyOf(ids);
    return [from, to];
  };
}

/**
 * A database of its own for a one-off bench script: created, migrated with a business, dist/
 * built, handed to `work` (its URL, a handle of two connections, the business's key), then
 * dropped whatever happens.
 */
export async function withBenchDatabase<T>(
  adminUrl: string,
  name: string,
  work: (db: { url: string; handle: DatabaseHandle; key: string }) => Promise<T>,
): Promise<T> {
  await admin(adminUrl, (c) => c.query(`create database ${name}`));
  const url = withDatabase(adminUrl, name);
  const handle = openPostgres(url, 2);
  try {
    build();
    const { key } = await prepareDatabase(handle);
    return await work({ url, handle, key });
  } finally {
    await handle.close();
    await admin(adminUrl, (c) => c.query(`drop database if exists ${name} with (force)`));
  }
}
