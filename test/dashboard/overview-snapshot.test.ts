import type { FastifyInstance } from 'fastify';
import { Kysely, PostgresDialect, sql, type PostgresPool } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.js';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { appOnDatabase, cloneTemplateDatabase } from '../harness.js';

/**
 * The overview's figures are of one moment. A request logged while the page was being read once
 * ticked the checklist's "make a request" while the chart beside it still counted no request that
 * day: the reads went side by side on separate connections of the pool. Here the app runs on a
 * pool whose statements pass hooks, and a request is made and its log flushed right after the
 * checklist's read of the log and before the chart's, every time. PostgreSQL only: on PGlite's
 * one connection the log's insert would wait for the overview's transaction to end.
 */
const url = process.env.DATABASE_URL;

type Hooks = { before(text: string): Promise<void>; after(text: string): Promise<void> };

/** A pool for Kysely whose statements go through `hooks` before and after they run. */
function hookedPool(connectionString: string, hooks: Hooks) {
  const pool = new pg.Pool({ connectionString, max: 20 });
  // The pool's end resolves before its connections have closed, and dropping the clone then
  // ends them (57P01): an idle or closing client reports that through the pool's 'error' event,
  // one in use through its own. Either, unheard, would be an uncaught error.
  pool.on('connect', (client) => client.on('error', () => {}));
  pool.on('error', () => {});
  const hooked = {
    async connect() {
      const client = await pool.connect();
      return {
        async query(text: string, parameters: unknown[]) {
          await hooks.before(text);
          const result = await client.query(text, parameters);
          await hooks.after(text);
          return result;
        },
        release: () => client.release(),
      };
    },
    end: () => pool.end(),
  };
  return hooked as unknown as PostgresPool;
}

const readsLog = (text: string) => /from "api_request_log"/.test(text);
const isChartRead = (text: string) => readsLog(text) && /count\(\*\)/.test(text);
const isChecklistRead = (text: string) => readsLog(text) && /limit/.test(text) && !isChartRead(text);

describe.skipIf(!url)('the overview on PostgreSQL', () => {
  let clone: { url: string; drop: () => Promise<void> };
  let db: Kysely<Database>;
  let app: FastifyInstance;
  let agent: Agent;
  let secret = '';
  /** Set before a page load: made once, after the checklist's first read of the log. */
  let requestAfterChecklist: (() => Promise<void>) | undefined;
  let logged: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    clone = await cloneTemplateDatabase(url!);
    db = new Kysely<Database>({
      dialect: new PostgresDialect({
        pool: hookedPool(clone.url, {
          before: async (text) => {
            if (isChartRead(text)) await logged;
          },
          after: async (text) => {
            const request = requestAfterChecklist;
            if (!request || !isChecklistRead(text)) return;
            requestAfterChecklist = undefined;
            await request();
          },
        }),
      }),
    });
    app = await appOnDatabase(db, 'postgres');
    agent = new Agent({ app });
    await agent.signup(`snapshot+${newId().slice(-12)}@example.com`);
    await agent.get('/dashboard/keys');
    secret = agent.textOf('new-secret-sandbox')!;
  });
  afterAll(async () => {
    await app?.close();
    await db?.destroy();
    await clone?.drop();
  });

  async function overview() {
    const page = await agent.get('/dashboard/overview');
    expect(page.statusCode).toBe(200);
    const ticked = /data-step="request" data-done="(true|false)"/.exec(page.body)![1] === 'true';
    const chart = /<svg[^>]*aria-label="API requests per day[^]*?<\/svg>/.exec(page.body)![0];
    const bars = [...chart.matchAll(/<title>[^<]*: (\d+)<\/title>/g)].map((m) => Number(m[1]));
    return { ticked, counted: bars.reduce((a, b) => a + b, 0) };
  }

  it('shows the checklist and the requests chart of the same moment', async () => {
    let done!: () => void;
    logged = new Promise<void>((resolve) => (done = resolve));
    requestAfterChecklist = async () => {
      const res = await app.inject({ method: 'GET', url: '/v1/customers', headers: { 'api-key': secret } });
      expect(res.statusCode).toBe(200);
      await app.requestLog!.flush();
      // Committed between the two reads, as the test means it to be (read outside the page's
      // transaction, in a statement the hooks above leave alone).
      const { rows } = await sql<{ n: number }>`select count(1)::int as n from api_request_log`.execute(db);
      expect(rows[0]!.n).toBe(1);
      done();
    };
    expect(await overview()).toEqual({ ticked: false, counted: 0 });
    expect(requestAfterChecklist).toBeUndefined();

    // The request was logged all the same: the next page shows it in both.
    expect(await overview()).toEqual({ ticked: true, counted: 1 });
  });
});
