import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type DatabaseHandle, type Db } from '../../src/db/client.js';
import type { Database } from '../../src/db/types.js';
import { readOverview } from '../../src/dashboard/overview-repo.js';
import { newId } from '../../src/lib/ids.js';
import { insertMany } from '../../src/modules/request-log/repo.js';
import { createTenant } from '../../src/modules/tenants/service.js';
import { cloneTemplateDatabase } from '../harness.js';

/**
 * The overview's figures are of one moment. A request logged while the page was being read once
 * ticked the checklist's "make a request" while the chart beside it still counted no request that
 * day: the reads went side by side on separate connections of the pool. Here a request is logged
 * (and committed) right after the checklist's read and before the chart's, every time.
 * PostgreSQL only: PGlite's one connection runs the reads one by one, and the log's insert would
 * wait for the overview's transaction to end.
 */
const url = process.env.DATABASE_URL;

/** A pool for Kysely whose statements go through `hooks` before and after they run. */
function hookedPool(connectionString: string, hooks: { before(sql: string): Promise<void>; after(sql: string): Promise<void> }) {
  const pool = new pg.Pool({ connectionString, max: 20 });
  const quiet = new WeakSet<pg.PoolClient>();
  const hooked = {
    async connect() {
      const client = await pool.connect();
      // Dropping the clone may end a connection that is still closing after the pool's end.
      if (!quiet.has(client)) quiet.add(client.on('error', () => {}));
      return {
        async query(sql: string, parameters: unknown[]) {
          await hooks.before(sql);
          const result = await client.query(sql, parameters);
          await hooks.after(sql);
          return result;
        },
        release: () => client.release(),
      };
    },
    end: () => pool.end(),
  };
  return hooked as unknown as PostgresPool;
}

describe.skipIf(!url)('the overview on PostgreSQL', () => {
  let clone: { url: string; drop: () => Promise<void> };
  let handle: DatabaseHandle;
  let hooked: Db;
  let scope: { tenantId: string; environment: 'sandbox' };
  let logged: Promise<void> = Promise.resolve();
  let logAfterChecklist = false;

  const isChecklistRead = (sql: string) => /from "api_request_log"/.test(sql) && /limit/.test(sql) && !/count\(\*\)/.test(sql);
  const isChartRead = (sql: string) => /from "api_request_log"/.test(sql) && /count\(\*\)/.test(sql);

  async function logRequest() {
    const now = new Date();
    await handle.db.transaction().execute((trx) =>
      insertMany(trx, [
        {
          id: newId(),
          tenant_id: scope.tenantId,
          environment: scope.environment,
          request_id: null,
          method: 'GET',
          path: '/v1/customers',
          query: null,
          status: 200,
          status_class: 2,
          duration_ms: 1,
          idempotency_key: null,
          idempotency_replayed: false,
          key_prefix: null,
          request_body: null,
          response_body: null,
          response_event_id: null,
          created_at: now,
        },
      ]),
    );
  }

  beforeAll(async () => {
    clone = await cloneTemplateDatabase(url!);
    handle = openPostgres(clone.url, 4);
    const tenant = await handle.db.transaction().execute((trx) => createTenant(trx, 'Snapshot Co'));
    scope = { tenantId: tenant.tenant_id, environment: 'sandbox' };
    let resolveLogged!: () => void;
    hooked = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: hookedPool(clone.url, {
          // The chart's read waits for the request logged after the checklist's read.
          before: async (sql) => {
            if (isChartRead(sql)) await logged;
          },
          after: async (sql) => {
            if (!logAfterChecklist || !isChecklistRead(sql)) return;
            logAfterChecklist = false;
            await logRequest();
            resolveLogged();
          },
        }),
      }),
    });
    logged = new Promise<void>((resolve) => (resolveLogged = resolve));
  });
  afterAll(async () => {
    await hooked?.destroy();
    await handle?.close();
    await clone?.drop();
  });

  it('shows the checklist and the requests chart of the same moment', async () => {
    const since = new Date(Date.now() - 86_400_000);
    logAfterChecklist = true;
    const first = await readOverview(hooked, scope, since, 10);
    const counted = first.requestDays.reduce((n, d) => n + d.total, 0);
    expect({ ticked: first.steps.request, counted }).toEqual({ ticked: false, counted: 0 });

    // The request was logged all the same: the next read shows it in both.
    const next = await readOverview(hooked, scope, since, 10);
    expect({ ticked: next.steps.request, counted: next.requestDays.reduce((n, d) => n + d.total, 0) }).toEqual({
      ticked: true,
      counted: 1,
    });
  });
});
