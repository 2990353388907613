/**
 * What a balance as of an instant costs against a plain account read, on an account with a short
 * history and again after 1,000,000 ledger entries (bench/history.ts seeds them as the API would
 * have written them): the as-of read is an index seek, so its ratio to the plain read should not
 * move with history. Also the period form (opening, closing, totals over one day of history).
 *
 *   npx tsx bench/as-of.ts [--entries N] [--reads N] [--admin-url postgres://…/postgres]
 *
 * Runs in process (Fastify inject, no sockets), on a database of its own on the PostgreSQL it is
 * pointed at, dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openPostgres } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { Sealer } from '../src/lib/crypto.js';
import { newId } from '../src/lib/ids.js';
import { createTenant } from '../src/modules/tenants/service.js';
import { seedHistory } from './history.js';

const { values } = parseArgs({
  options: {
    entries: { type: 'string', default: '1000000' },
    reads: { type: 'string', default: '3000' },
    'admin-url': { type: 'string', default: process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const entries = Number(values.entries);
const reads = Number(values.reads);
const adminUrl = values['admin-url']!;
const name = `bench_asof_${randomBytes(4).toString('hex')}`;

async function admin(statement: string) {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(statement);
  } finally {
    await c.end();
  }
}

async function main() {
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const handle = openPostgres(url.toString(), 4);
  try {
    await migrate(handle);
    const config = loadConfig({}, { LOG_LEVEL: 'silent', DEMO_TENANT: false });
    const app = await buildApp({
      config,
      db: handle.db,
      dbKind: handle.kind,
      sealer: new Sealer(randomBytes(32).toString('base64')),
      logger: false,
      changes: handle.changes,
      poolStats: handle.poolStats,
    });
    await app.ready();
    const tenant = await handle.db.transaction().execute((trx) => createTenant(trx, 'As-of bench'));
    const key = tenant.sandbox.secret_key;
    const call = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
      const res = await app.inject({
        method,
        url: path,
        headers: { 'api-key': key, ...(body ? { 'content-type': 'application/json', 'idempotency-key': newId() } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
      if (res.statusCode !== 200) throw new Error(`${method} ${path}: ${res.statusCode} ${res.body}`);
      return JSON.parse(res.body).data;
    };
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { id } = await call('POST', '/v1/accounts', { currency: 'NGN', label: `bench ${i}` });
      await call('POST', `/v1/simulations/accounts/${id}/fund`, { amount: '1000000000' });
      ids.push(id);
    }
    const account = ids[0]!;

    /** Mean microseconds per request over `reads` sequential requests, after a warm-up. */
    const time = async (path: () => string) => {
      for (let i = 0; i < 200; i++) await call('GET', path());
      const started = process.hrtime.bigint();
      for (let i = 0; i < reads; i++) await call('GET', path());
      return Number(process.hrtime.bigint() - started) / 1000 / reads;
    };
    const measure = async (label: string, instants: () => Date) => {
      await sql`analyze`.execute(handle.db);
      const plain = await time(() => `/v1/accounts/${account}`);
      const asOf = await time(() => `/v1/accounts/${account}/balances?as_of=${encodeURIComponent(instants().toISOString())}`);
      const day = (d: Date) => d.toISOString().slice(0, 10);
      const period = await time(() => {
        const d = instants();
        return `/v1/accounts/${account}/balances?from=${day(d)}&to=${day(d)}`;
      });
      const { count } = await handle.db
        .selectFrom('ledger_entries')
        .select((eb) => eb.fn.countAll<string>().as('count'))
        .where('account_id', '=', account)
        .executeTakeFirstOrThrow();
      console.log(
        `${label}: account entries ${count}; plain read ${plain.toFixed(0)} µs; as_of ${asOf.toFixed(0)} µs (${(asOf / plain).toFixed(2)}× plain); one-day period ${period.toFixed(0)} µs (${(period / plain).toFixed(2)}× plain)`,
      );
      return { plain, asOf, period };
    };

    const small = await measure('short history', () => new Date(Date.now() - 1000));
    const started = Date.now();
    await seedHistory(handle.db, { tenantId: tenant.tenant_id, environment: 'sandbox' }, ids, entries);
    console.log(`seeded ${entries.toLocaleString('en')} ledger entries in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // Instants spread over the seeded 30 days, so the seeks land all over the index.
    let n = 0;
    const spread = () => new Date(Date.now() - 3_600_000 - ((n++ * 7919) % 29) * 86_400_000 - (n % 86_400) * 1000);
    const big = await measure(`${entries.toLocaleString('en')} entries`, spread);
    const plan = await sql<{ 'QUERY PLAN': string }>`explain (analyze, buffers, costs off)
      select balance_after from ledger_entries where account_id = ${account} and id < ${newId()} order by id desc limit 1`.execute(
      handle.db,
    );
    console.log(plan.rows.map((r) => `  ${r['QUERY PLAN']}`).join('\n'));
    console.log(
      `as_of / plain read: ${(small.asOf / small.plain).toFixed(2)}× with a short history, ${(big.asOf / big.plain).toFixed(2)}× with ${entries.toLocaleString('en')} entries`,
    );
    await app.close();
  } finally {
    await handle.close();
    await admin(`drop database if exists ${name} with (force)`);
  }
}

await main();
