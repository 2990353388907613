import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { buildApp, type AppOptions } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { openPGlite, openPostgres, type DatabaseHandle, type Db, type Trx, type UnitOfWork } from '../src/db/client.js';
import { Sealer } from '../src/lib/crypto.js';
import { metricsRegistry } from '../src/lib/metrics.js';
import { newId } from '../src/lib/ids.js';
import { createTenant, type CreatedTenant } from '../src/modules/tenants/service.js';
import { withDatabase } from './global-setup.js';

export interface TestResponse<T = any> {
  status: number;
  headers: OutgoingHttpHeaders;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string | null;
  idempotencyKey?: string | null;
  headers?: Record<string, string>;
}

export type TestApp = Awaited<ReturnType<typeof startTestApp>>;

/**
 * A new PostgreSQL database cloned from the run's migrated template (DATABASE_URL's server), or
 * from `template` (`template1`: an empty database): its URL, and `drop` to remove it.
 */
export async function cloneTemplateDatabase(
  url: string,
  template: string = inject('pgTemplate'),
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `fsapi_${inject('runId')}_${newId().replace(/-/g, '').slice(-16)}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`create database ${name} template ${template}`);
  await admin.end();
  return {
    url: withDatabase(url, name),
    async drop() {
      const cleanup = new pg.Client({ connectionString: url });
      await cleanup.connect();
      await cleanup.query(`drop database if exists ${name} with (force)`);
      await cleanup.end();
    },
  };
}

/**
 * A fresh database for this test file: a clone of the run's migrated template, or with
 * `{ migrated: false }` an empty one (an upgrade test applies the migrations it wants).
 */
export async function openTestDatabase(options: { migrated?: boolean } = {}): Promise<DatabaseHandle> {
  const migrated = options.migrated ?? true;
  const url = process.env.DATABASE_URL;
  if (url) {
    const clone = await cloneTemplateDatabase(url, migrated ? undefined : 'template1');
    const handle = openPostgres(clone.url, 10);
    const close = handle.close;
    return {
      ...handle,
      async close() {
        await close();
        await clone.drop();
      },
    };
  }
  if (!migrated) return openPGlite();
  const dump = readFileSync(inject('pgliteDump'));
  return openPGlite({ loadDataDir: new Blob([dump]) });
}

/** A test's settings: nothing logged, no demo business, `overrides` on top. */
const testConfig = (overrides: Partial<Config>) => loadConfig({}, { LOG_LEVEL: 'silent', DEMO_TENANT: false, ...overrides });

/** A sealer with a key of its own. */
const newSealer = () => new Sealer(randomBytes(32).toString('base64'));

/**
 * The real app on a database the test opened itself (a pool whose statements it counts or
 * hooks, a data directory a command wrote): a test's settings (`testConfig`) and a sealing
 * key of its own. The caller closes it.
 */
export async function appOnDatabase(
  db: Db,
  dbKind: AppOptions['dbKind'],
  overrides: Partial<Config> = {},
  options: Partial<Omit<AppOptions, 'db' | 'dbKind' | 'config'>> = {},
): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig(overrides), db, dbKind, sealer: newSealer(), logger: false, ...options });
  await app.ready();
  return app;
}

/**
 * The real app on a fresh database, called over HTTP through Fastify's inject (the whole
 * request pipeline: parsing, hooks, auth, validation, serialization). `options.logger`: Fastify's
 * logger options (a test that reads the log passes a stream); unset, nothing is logged unless
 * `TEST_LOG=1`, which logs errors (a 500's cause) to the console.
 */
export async function startTestApp(overrides: Partial<Config> = {}, options: { logger?: object } = {}) {
  const handle = await openTestDatabase();
  // Webhook tests deliver to receivers on 127.0.0.1: the development server's loopback setting.
  const config = testConfig({ WEBHOOK_SANDBOX_LOOPBACK: true, ...overrides });
  const sealer = newSealer();
  const shared = { config, db: handle.db, dbKind: handle.kind, sealer, changes: handle.changes, poolStats: handle.poolStats };
  const app: FastifyInstance = await buildApp({ ...shared, logger: options.logger ?? (process.env.TEST_LOG ? { level: 'error' } : false) });
  await app.ready();

  async function request<T = any>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers['api-key'] = options.key;
    if (method === 'POST' && options.idempotencyKey !== null) {
      headers['idempotency-key'] = options.idempotencyKey ?? newId();
    }
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
    let parsed: unknown = undefined;
    try {
      parsed = res.body ? JSON.parse(res.body) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: res.statusCode, headers: res.headers, body: parsed as T, text: res.body };
  }

  return {
    app,
    db: handle.db,
    dbKind: handle.kind,
    handle,
    config,
    sealer,
    request,
    /** Another app on the same database, settings and keys: its own batchers and lanes, as a second process has. The caller closes it. */
    otherApp: () => buildApp({ ...shared, logger: false }),
    /** What a worker tick hands its job: one transaction per call (jobs never open their own). */
    unitOfWork: ((work) => handle.db.transaction().execute(work)) as UnitOfWork,
    /** A new business with sandbox and live key pairs. */
    tenant: (name = 'Test Business'): Promise<CreatedTenant> => handle.db.transaction().execute((trx) => createTenant(trx, name)),
    async close() {
      await app.close();
      await handle.close();
    },
  };
}

/** Client bound to one API key, for readable tests. */
export function clientFor(t: TestApp, key: string) {
  return {
    get: <T = any>(url: string, o: RequestOptions = {}) => t.request<T>('GET', url, undefined, { key, ...o }),
    post: <T = any>(url: string, body?: unknown, o: RequestOptions = {}) => t.request<T>('POST', url, body, { key, ...o }),
    put: <T = any>(url: string, body?: unknown, o: RequestOptions = {}) => t.request<T>('PUT', url, body, { key, ...o }),
    patch: <T = any>(url: string, body?: unknown, o: RequestOptions = {}) => t.request<T>('PATCH', url, body, { key, ...o }),
    delete: <T = any>(url: string, o: RequestOptions = {}) => t.request<T>('DELETE', url, undefined, { key, ...o }),
  };
}
export type Client = ReturnType<typeof clientFor>;

/** A new business of `t`: its tenant, a client with its sandbox secret key, and its sandbox scope (for calling services directly). */
export async function sandboxBusiness(t: TestApp, name: string) {
  const tenant = await t.tenant(name);
  const ctx = { tenantId: tenant.tenant_id, environment: 'sandbox' as const };
  return { tenant, api: clientFor(t, tenant.sandbox.secret_key), ctx };
}

/** The contract's example customer (section 14). */
export function johnDoe(overrides: Record<string, unknown> = {}) {
  return {
    first_name: 'John',
    last_name: 'Doe',
    middle_name: 'Michael',
    email: `john.doe+${newId().slice(-8)}@example.com`,
    phone: '+2348012345678',
    type: 'individual',
    gender: 'male',
    date_of_birth: '1990-01-15',
    address: { address_line1: '12 Marina Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
    ...overrides,
  };
}

/**
 * Runs `work` in a transaction and counts the statements it sends (BEGIN and COMMIT aside: every
 * other statement passes through a plugin's transformResult).
 */
export async function countStatements<T>(db: Db, work: (trx: Trx) => Promise<T>): Promise<{ count: number; result: T }> {
  const counted = countingStatements(db);
  const result = await counted.db.transaction().execute(work);
  return { count: counted.count(), result };
}

/** `db` counting the statements it runs, on its own connections and in its transactions (BEGIN and COMMIT aside). */
export function countingStatements(db: Db): { db: Db; count: () => number } {
  let count = 0;
  const counted = db.withPlugin({
    transformQuery: (args) => args.node,
    transformResult: async (args) => {
      count++;
      return args.result;
    },
  });
  return { db: counted, count: () => count };
}

/**
 * The deadlocks PostgreSQL detected in the test's database while `work` ran (always 0 on PGlite,
 * which has one connection). The statistics reach pg_stat_database when a backend reports them,
 * at most a second later, so the count after waits for that.
 */
export async function deadlocksDuring(t: Pick<TestApp, 'db' | 'dbKind'>, work: () => Promise<void>): Promise<number> {
  const deadlocks = async () => {
    await sql`select pg_stat_clear_snapshot()`.execute(t.db);
    const row = await sql<{ n: string }>`select deadlocks::text as n from pg_stat_database where datname = current_database()`.execute(
      t.db,
    );
    return Number(row.rows[0]?.n ?? 0);
  };
  const before = t.dbKind === 'postgres' ? await deadlocks() : 0;
  await work();
  if (t.dbKind !== 'postgres') return 0;
  await new Promise((r) => setTimeout(r, 1500));
  return (await deadlocks()) - before;
}

/** One gatherer's batch-size histogram in this process (its label: `fx_orders`, `collections`, …): batches and requests so far. */
export async function batchSizes(label: string): Promise<{ count: number; sum: number }> {
  const metric = (await metricsRegistry.getSingleMetric('fsapi_commit_batch_size')!.get()).values;
  const of = (name: string) =>
    metric.find((v) => (v as { metricName?: string }).metricName === name && v.labels.batch === label)?.value ?? 0;
  return { count: of('fsapi_commit_batch_size_count'), sum: of('fsapi_commit_batch_size_sum') };
}
