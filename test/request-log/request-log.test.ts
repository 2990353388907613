import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId, uuidv7LowerBound } from '../../src/lib/ids.js';
import { arrayParameter } from '../../src/db/values.js';
import * as logRepo from '../../src/modules/request-log/repo.js';
import { getRequest, listRequests, purgeExpiredRequests, RequestLog, RequestLogRetention } from '../../src/modules/request-log/service.js';
import { answerOfEvent } from '../../src/dashboard/request-routes.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { Agent } from '../dashboard-agent.js';
import { explainPrepared, planWithoutSeqScans, recordSent, sentStatements } from '../plans.js';
import type { Queryable } from '../../src/db/client.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

/** The API request log: what each /v1 request leaves behind, redacted, and how the dashboard finds it. */
let t: TestApp;
let agent: Agent;
let api: Client;
let secretKey: string;
let tenantId: string;

/** A request as the HTTP layer hands it to the log. */
const capturedEntry = () => ({
  tenantId,
  environment: 'sandbox',
  requestId: 'x',
  method: 'GET',
  url: '/v1/x',
  status: 200,
  durationMs: 1,
  idempotencyKey: null,
  replayed: false,
  keyPrefix: null,
  requestBody: undefined,
  responseBody: null,
  startedAt: Date.now(),
});
/** The flusher's insert, each statement its own transaction as the flusher runs it (`retry`: of a flush that failed). */
const insertLog = (rows: logRepo.NewRequestLogRow[], retry = false) => logRepo.insertMany(t.db, rows, retry);
const synchronousCommit = async (db: Queryable) =>
  (await sql<{ value: string }>`select current_setting('synchronous_commit') as value`.execute(db)).rows[0]!.value;
const rows = () => t.db.selectFrom('api_request_log').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute();

/** A request log row made at `at` (its id's time too): a 200 GET of this business unless `fields` say otherwise. */
const logRow = (at: Date, fields: Partial<logRepo.NewRequestLogRow> = {}): logRepo.NewRequestLogRow => ({
  id: `${uuidv7LowerBound(at).slice(0, 18)}-8000-${newId().slice(-12)}`,
  tenant_id: tenantId,
  environment: 'sandbox',
  request_id: newId(),
  method: 'GET',
  path: '/v1/accounts',
  query: null,
  status: 200,
  status_class: 2,
  duration_ms: 1,
  idempotency_key: null,
  idempotency_replayed: false,
  key_prefix: null,
  request_body: null,
  response_body: null,
  created_at: at,
  ...fields,
});

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`log+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  secretKey = agent.textOf('new-secret-sandbox')!;
  api = clientFor(t, secretKey);
  await agent.get('/dashboard/business');
  tenantId = agent.textOf('tenant-id')!;
});
afterAll(() => t.close());

describe('request log', () => {
  it('records method, path, status, latency, request id, key prefix and both bodies', async () => {
    const created = await api.post('/v1/customers', johnDoe({ first_name: 'Logged' }), { idempotencyKey: 'log-customer-1' });
    expect(created.status).toBe(200);
    await t.app.requestLog!.flush();
    const row = (await rows()).find((r) => (r.request_id ?? r.id) === created.headers['x-request-id'])!;
    expect(row).toMatchObject({
      method: 'POST',
      path: '/v1/customers',
      status: 200,
      status_class: 2,
      idempotency_key: 'log-customer-1',
      idempotency_replayed: false,
      environment: 'sandbox',
    });
    expect(row.key_prefix).toBe(`sk_sandbox_…${secretKey.slice(-4)}`);
    expect(row.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.parse(row.request_body!).first_name).toBe('Logged');
    expect(JSON.parse(row.response_body!).data.id).toBe(created.body.data.id);
    expect(JSON.stringify(row)).not.toContain(secretKey);
  });

  it('marks an idempotent replay', async () => {
    const body = johnDoe({ first_name: 'Replay' });
    await api.post('/v1/customers', body, { idempotencyKey: 'log-replay' });
    const again = await api.post('/v1/customers', body, { idempotencyKey: 'log-replay' });
    expect(again.headers['idempotency-replayed']).toBe('true');
    await t.app.requestLog!.flush();
    const replay = (await rows()).find((r) => (r.request_id ?? r.id) === again.headers['x-request-id'])!;
    expect(replay.idempotency_replayed).toBe(true);
  });

  it('never stores API keys, webhook secrets or card data', async () => {
    const hook = await api.post('/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/hook' });
    expect(hook.status).toBe(201);
    const secret = hook.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    const token = await api.post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '123' });
    // Key-shaped strings and card numbers are masked wherever they appear, also in free text.
    const note = await api.post('/v1/customers', johnDoe({ middle_name: `${secretKey} 4000 0000 0000 0002` }));
    await t.app.requestLog!.flush();
    const stored = JSON.stringify(await rows());
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain('4242424242424242');
    expect(stored).not.toContain('4000 0000 0000 0002');
    expect(stored).not.toContain(secretKey);
    expect(stored).not.toContain('"cvv":"123"');
    const tokenRow = (await rows()).find((r) => (r.request_id ?? r.id) === token.headers['x-request-id'])!;
    expect(JSON.parse(tokenRow.request_body!)).toMatchObject({ card_number: '[redacted]', cvv: '[redacted]' });
    expect(note.status).toBeLessThan(500);
  });

  it('finds an error answer by its request_id on the dashboard, with its body', async () => {
    const bad = await api.post('/v1/transfers', {
      source: { id: newId() },
      destination: { destination_type: 'internal_account', id: newId() },
      amount: '5.00',
    });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    const requestId = bad.body.error.request_id as string;
    const list = await agent.get(`/dashboard/requests?request_id=${encodeURIComponent(requestId)}`);
    expect(list.statusCode).toBe(200);
    const link = /href="(\/dashboard\/requests\/[0-9a-f-]{36})"/.exec(list.body)![1]!;
    expect(list.body).toContain(requestId);
    const detail = await agent.get(link);
    expect(detail.body).toContain('Request body');
    expect(detail.body).toContain('5.00');
    expect(detail.body).toContain(bad.body.error.code);
  });

  it("keeps a transfer's answer as its event, not its text a second time, and shows it as it was sent (migration 1264)", async () => {
    const open = async () => (await api.post('/v1/accounts', { currency: 'NGN', label: 'logged' })).body.data.id as string;
    const [from, to] = [await open(), await open()];
    expect((await api.post(`/v1/simulations/accounts/${from}/fund`, { amount: '10.00' })).status).toBe(200);
    const description = 'Caf\u00e9 "q" \\ </pre> \ud83d\udcb8';
    const sent = await api.post(
      '/v1/transfers',
      { source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '2.50', description },
      { idempotencyKey: 'log-transfer' },
    );
    expect(sent.status).toBe(200);
    await t.app.requestLog!.flush();
    const row = (await rows()).find((r) => (r.request_id ?? r.id) === sent.headers['x-request-id'])!;
    expect(row.response_body).toBeNull();
    const { rows: events } = await sql<{ id: string; event_type: string }>`
      select id, event_type from events where tenant_id = ${tenantId} and event_group_id = ${sent.body.data.id}`.execute(t.db);
    expect(events).toEqual([{ id: row.response_event_id, event_type: 'transfer.status.completed' }]);
    const detail = await getRequest(t.db, { tenantId, environment: 'sandbox' }, row.id, answerOfEvent);
    expect(detail!.response_body).toBe(sent.text);
    const page = await agent.get(`/dashboard/requests/${row.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(sent.body.data.id);
    expect(page.body).toContain('&lt;/pre&gt;');
  });

  it('logs a request under the id the server made for it, keeps an id the client sent, and finds both (migration 1265)', async () => {
    const made = await api.get('/v1/accounts');
    const sentUuid = newId();
    const sent = await api.get('/v1/accounts', { headers: { 'x-request-id': sentUuid } });
    const sentText = await api.get('/v1/accounts', { headers: { 'x-request-id': 'client-req.1' } });
    expect(sent.headers['x-request-id']).toBe(sentUuid);
    await t.app.requestLog!.flush();
    const all = await rows();
    const madeId = made.headers['x-request-id'] as string;
    // The server's id is the row's id; request_id stays empty.
    expect(all.find((r) => r.id === madeId)).toMatchObject({ request_id: null, path: '/v1/accounts' });
    // A client's id, a UUID or not, is kept as sent; the row has an id of its own.
    expect(all.find((r) => r.request_id === sentUuid)!.id).not.toBe(sentUuid);
    expect(all.find((r) => r.request_id === 'client-req.1')).toBeDefined();
    const scope = { tenantId, environment: 'sandbox' as const };
    for (const id of [madeId, madeId.toUpperCase(), sentUuid, 'client-req.1']) {
      const page = await listRequests(t.db, scope, { page: 1, items_per_page: 10, request_id: id });
      expect(page.items.map((r) => r.request_id)).toEqual([id.toLowerCase() === madeId ? madeId : id]);
    }
    expect(sentText.status).toBe(200);
    const onDashboard = await agent.get(`/dashboard/requests?request_id=${madeId}`);
    expect(onDashboard.body).toContain(madeId);
  });

  it('filters by status class, method and path, and pages with a cursor', async () => {
    for (let i = 0; i < 3; i++) await api.get(`/v1/customers?items_per_page=${i + 1}`);
    await api.get('/v1/customers/not-a-uuid');
    await t.app.requestLog!.flush();
    const errors = await agent.get('/dashboard/requests?status=4xx');
    expect(errors.body).toContain('/v1/customers/not-a-uuid');
    expect(errors.body).not.toMatch(/badge-completed">200/);
    const gets = await agent.get('/dashboard/requests?method=GET&path=/v1/customers');
    expect(gets.body).toContain('items_per_page=3');
    expect(gets.body).not.toContain('<td>POST</td>');
    expect((await agent.get('/dashboard/requests?status=9xx')).body).toContain('Invalid filter');

    const scope = { tenantId, environment: 'sandbox' as const };
    const first = await logRepo.list(t.db, scope, { page: 1, items_per_page: 2, method: 'GET' });
    expect(first.items).toHaveLength(2);
    const next = await logRepo.list(t.db, scope, { page: 1, items_per_page: 2, method: 'GET', cursor: first.next_cursor! });
    expect(next.items[0]!.id < first.items[1]!.id).toBe(true);
  });

  it('keeps the live environment apart', async () => {
    await agent.post('/dashboard/environment', { environment: 'live', back: 'requests' });
    const live = await agent.get('/dashboard/requests');
    expect(live.body).toContain('No API requests yet');
    await agent.post('/dashboard/environment', { environment: 'sandbox', back: 'requests' });
  });

  it('holds a bounded buffer: beyond it entries are dropped and counted, never waited for', () => {
    const log = new RequestLog(t.db, { maxBuffered: 2 });
    const entry = capturedEntry();
    for (let i = 0; i < 5; i++) log.record({ ...entry });
    expect(log.pending).toBe(2);
    expect(log.dropped).toBe(3);
  });

  it("commits its flushes without waiting for the WAL flush, and leaves the connection's setting as it was", async () => {
    // The insert sets synchronous_commit off for its own transaction: seen inside a transaction
    // that holds the statement, and gone from the connection once the statement, run alone, committed.
    const inside = await t.db.transaction().execute(async (trx) => {
      await logRepo.insertMany(trx, [logRow(new Date(), { request_id: 'async-commit' })]);
      return synchronousCommit(trx);
    });
    const before = await synchronousCommit(t.db);
    const after = await t.db.connection().execute(async (connection) => {
      await logRepo.insertMany(connection, [logRow(new Date(), { request_id: 'async-commit-alone' })]);
      return synchronousCommit(connection);
    });
    expect(inside).toBe('off');
    expect(after).toBe(before);
    expect((await rows()).filter((r) => r.request_id?.startsWith('async-commit'))).toHaveLength(2);
  });

  it('writes a flush with one statement on the pool: its own transaction, one round trip, no begin and commit', async () => {
    // A statement in a transaction runs on the transaction's executor, not the pool's recorded here.
    const sent = await sentStatements(t.db, async (own) => {
      const log = new RequestLog(own);
      log.record({ ...capturedEntry(), requestId: 'one-statement-1' });
      log.record({ ...capturedEntry(), requestId: 'one-statement-2' });
      await log.flush();
    });
    expect(sent.map((q) => q.query.kind)).toEqual(['InsertQueryNode']);
    expect((await rows()).filter((r) => r.request_id?.startsWith('one-statement'))).toHaveLength(2);
  });

  it('stores every character of a flush of many rows as given, and skips rows already there', async () => {
    // Bodies and paths hold any text; a flush retried after a failure must not double a row.
    const tricky = ['"quoted"', 'back\\slash', '{braces}, commas', 'NULL', 'new\nline', 'é ✓ 🙂', '', ' padded '];
    const at = new Date();
    const many = Array.from({ length: 12 }, (_, i) => ({
      id: newId(),
      tenant_id: tenantId,
      environment: 'sandbox',
      request_id: `tricky-${i}`,
      method: 'POST',
      path: `/v1/tricky/${tricky[i % tricky.length]}`,
      query: i % 2 ? null : tricky[(i + 1) % tricky.length]!,
      status: 400 + i,
      status_class: 4,
      duration_ms: i,
      idempotency_key: i % 3 ? null : `key-${i}`,
      idempotency_replayed: i % 2 === 0,
      key_prefix: null,
      request_body: JSON.stringify({ note: tricky[i % tricky.length] }),
      response_body: i === 5 ? null : tricky[i % tricky.length]!,
      response_event_id: i % 4 === 1 ? newId() : null,
      created_at: at,
    }));
    await insertLog(many);
    await insertLog(many.slice(0, 10), true); // a retried flush
    const stored = (await rows()).filter((r) => r.request_id?.startsWith('tricky-'));
    expect(stored).toHaveLength(12);
    for (const row of many) {
      const got = stored.find((r) => r.id === row.id)!;
      expect({ ...got, created_at: got.created_at.getTime() }).toEqual({ ...row, created_at: at.getTime() });
    }
  });

  it('inserts a flush of new rows without reading the log, on the generic plan a connection keeps however large the log grows', async () => {
    // The fault: every row was checked against the table by a `not exists`, whose generic plan,
    // made while the table was small, was a hash anti join over a sequential scan of the whole log.
    const plan = await t.db.transaction().execute(async (trx) => {
      const sent = recordSent(trx);
      await logRepo.insertMany(trx, [logRow(new Date())]);
      await sql`set local plan_cache_mode = force_generic_plan`.execute(trx);
      return explainPrepared(trx, sent[0]!);
    });
    expect(plan).toContain('Insert on api_request_log');
    expect(plan.split('\n').filter((line) => /Scan/.test(line) && line.includes('api_request_log'))).toEqual([]);
  });

  it('retries a flush whose commit went through though its answer was lost, without doubling a row', async () => {
    // The insert committed, then its answer was lost on the way back.
    let calls = 0;
    const losing = t.db.withPlugin({
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (++calls === 1) throw Object.assign(new Error('Connection terminated unexpectedly'), { code: '08006' });
        return args.result;
      },
    });
    const log = new RequestLog(losing);
    log.record({ ...capturedEntry(), requestId: 'lost-answer-1' });
    log.record({ ...capturedEntry(), requestId: 'lost-answer-2' });
    await log.flush();
    expect(log.pending).toBe(2); // kept: as far as the flusher knows, nothing was written
    log.record({ ...capturedEntry(), requestId: 'lost-answer-3' });
    await log.flush();
    expect(log.pending).toBe(0);
    const stored = (await rows()).filter((r) => r.request_id?.startsWith('lost-answer-'));
    expect(stored.map((r) => r.request_id).sort()).toEqual(['lost-answer-1', 'lost-answer-2', 'lost-answer-3']);
  });

  it('sends a column of text as array text written by JSON.stringify, and stores it exactly as the array pg wrote', async () => {
    // Text JSON escapes as PostgreSQL's array text does (quotes, backslashes, a backslash and an n
    // as two characters) goes as array text; a control character or a lone surrogate, as an array.
    const asText = ['"quoted" \\ back', 'literal \\n and \\\\u0001', '{"a":"b\\"c"}', 'NULL', 'null', '', 'é ✓ 🙂', '{,}'];
    const asArray = ['new\nline', 'tab\t', 'nul-free \u0001', 'lone \ud800 surrogate'];
    expect(arrayParameter([...asText, null])).toBe(`{${JSON.stringify([...asText, null]).slice(1, -1)}}`);
    for (const text of asArray) expect(arrayParameter(['plain', text])).toEqual(['plain', text]);
    const at = new Date();
    const bodies = [...asText, ...asArray.slice(0, 3)];
    const many = bodies.map((body, i) =>
      logRow(at, { request_id: `array-text-${i}`, path: `/v1/x/${asText[i % asText.length]}`, response_body: body }),
    );
    await insertLog(many);
    const stored = (await rows()).filter((r) => r.request_id?.startsWith('array-text-'));
    expect(stored.map((r) => [r.path, r.response_body]).sort()).toEqual(many.map((r) => [r.path, r.response_body]).sort());
  });

  it('deletes rows past the retention, and only those', async () => {
    const old = new Date(Date.now() - 31 * 86_400_000);
    await insertLog([logRow(old, { request_id: 'old', path: '/v1/old' })]);
    const before = (await rows()).length;
    await purgeExpiredRequests(t.db, 30);
    const after = await rows();
    expect(after.find((r) => r.request_id === 'old')).toBeUndefined();
    expect(after.length).toBe(before - 1);
  });
});

describe('per-business retention', () => {
  /** A log row of `tenant` made `days` ago (request_id says which). */
  const rowAged = (tenant: string, days: number): logRepo.NewRequestLogRow =>
    logRow(new Date(Date.now() - days * 86_400_000), {
      tenant_id: tenant,
      environment: days % 2 === 0 ? 'sandbox' : 'live',
      request_id: `aged-${days}`,
      path: '/v1/aged',
    });
  const kept = async (tenant: string) =>
    (await t.db.selectFrom('api_request_log').select('request_id').where('tenant_id', '=', tenant).where('path', '=', '/v1/aged').execute())
      .map((r) => r.request_id)
      .sort();

  it('keeps each business its own number of days, the configured default for the others', async () => {
    const short = (await t.tenant('Short')).tenant_id;
    const long = (await t.tenant('Long')).tenant_id;
    const plain = (await t.tenant('Plain')).tenant_id;
    await setSettings(t.db, short, { request_log_retention_days: 3 });
    await setSettings(t.db, long, { request_log_retention_days: 60 });
    // Refused on write; a hand-edited out-of-bounds value is ignored by the sweep (the default applies).
    await expect(setSettings(t.db, plain, { request_log_retention_days: 5000 })).rejects.toThrow(/request_log_retention_days/);
    await t.db
      .updateTable('tenants')
      .set({ settings: JSON.stringify({ request_log_retention_days: 5000 }) })
      .where('id', '=', plain)
      .execute();
    const ages = [1, 4, 40, 70];
    await insertLog([short, long, plain].flatMap((tenant) => ages.map((d) => rowAged(tenant, d))));
    // Small pages and batches: the sweep walks several pages and repeats a page with more old rows.
    await purgeExpiredRequests(t.db, 30, { tenantsPerTick: 2, rowsPerTenant: 1 });
    expect(await kept(short)).toEqual(['aged-1']);
    expect(await kept(plain)).toEqual(['aged-1', 'aged-4']);
    expect(await kept(long)).toEqual(['aged-1', 'aged-4', 'aged-40']);
  });

  it('walks the businesses a page per tick and starts over when done', async () => {
    const tenant = (await t.tenant('Sweep')).tenant_id;
    await insertLog([rowAged(tenant, 40)]);
    const sweep = new RequestLogRetention(t.db, 30, { tenantsPerTick: 1000 });
    expect(await sweep.tick()).toBe(false); // one page holds every business: done
    expect(await kept(tenant)).toEqual([]);
    await insertLog([rowAged(tenant, 35)]);
    expect(await sweep.tick()).toBe(false);
    expect(await kept(tenant)).toEqual([]);
  });

  it('is set on the dashboard settings page by owners and admins, within 1 to 90 days, and audit-logged', async () => {
    const page = await agent.get('/dashboard/settings');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Request log retention');
    expect(page.body).toContain('the server default (30 days)');
    for (const bad of ['0', '91', 'abc', '7.5', '']) {
      const refused = await agent.post('/dashboard/settings/request-log', { retention_days: bad });
      expect(refused.statusCode, bad).toBe(400);
      expect(refused.body).toContain('Choose a whole number of days from 1 to 90');
    }
    expect((await agent.post('/dashboard/settings/request-log', { retention_days: '7' })).statusCode).toBe(303);
    const tenant = await t.db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirstOrThrow();
    expect(tenant.settings.request_log_retention_days).toBe(7);
    const after = await agent.get('/dashboard/settings');
    expect(after.body).toContain('7 days');
    expect(after.body).toContain('Use the default (30 days)');

    // The worker honours it: a 10-day-old row of this business goes, a 5-day-old one stays.
    await insertLog([rowAged(tenantId, 10), rowAged(tenantId, 5)]);
    await purgeExpiredRequests(t.db, 30);
    expect(await kept(tenantId)).toEqual(['aged-5']);

    // Back to the default.
    expect((await agent.post('/dashboard/settings/request-log', { retention_days: 'default' })).statusCode).toBe(303);
    const reset = await t.db.selectFrom('tenants').select('settings').where('id', '=', tenantId).executeTakeFirstOrThrow();
    expect(reset.settings).not.toHaveProperty('request_log_retention_days');
    const audit = await agent.get('/dashboard/audit?action=settings.request_log_retention');
    expect(audit.body).toContain('default → 7 days');
    expect(audit.body).toContain('7 days → default (30 days)');

    // A viewer reads the setting but cannot change it.
    await agent.get('/dashboard/team');
    await agent.post('/dashboard/team/invite', { email: `viewer+${newId().slice(-12)}@example.com`, role: 'viewer' });
    await agent.get('/dashboard/team');
    const link = new URL(agent.textOf('one-time-link')!).pathname;
    const viewer = new Agent(t);
    await viewer.get(link);
    expect((await viewer.post(link, { password: 'viewer long password' })).statusCode).toBe(303);
    const viewed = await viewer.get('/dashboard/settings');
    expect(viewed.statusCode).toBe(200);
    expect(viewed.body).not.toContain('action="/dashboard/settings/request-log"');
    expect((await viewer.post('/dashboard/settings/request-log', { retention_days: '1' })).statusCode).toBe(403);
  }, 60_000);
});

describe('the request log reads walk indexes', () => {
  const statementsOf = (call: (db: typeof t.db) => Promise<unknown>) => sentStatements(t.db, call);
  const planOf = (query: CompiledQuery, plan: 'generic' | 'custom' = 'generic') => planWithoutSeqScans(t.db, query, plan);

  // A business with a history the planner can weigh: 3,000 requests, one in ten not 2xx, one in
  // twenty a transfer, each its own request id; then the table's statistics.
  const busy = newId();
  const scope = () => ({ tenantId: busy, environment: 'sandbox' as const });
  beforeAll(async () => {
    const start = Date.now() - 3_000_000;
    const history = Array.from({ length: 3000 }, (_, i) => {
      const status = i % 10 === 0 ? (i % 20 === 0 ? 500 : 404) : 200;
      return logRow(new Date(start + i * 1000), {
        tenant_id: busy,
        request_id: `req-${i}`,
        path: i % 20 === 7 ? `/v1/transfers/${newId()}` : `/v1/accounts/${newId()}`,
        status,
        status_class: Math.floor(status / 100),
      });
    });
    await insertLog(history);
    await sql`analyze api_request_log`.execute(t.db);
  });

  it.each([
    ['newest first', {}, 'api_request_log_pkey'],
    ['5xx', { status_class: 5 }, 'api_request_log_status_idx'],
    ['4xx', { status_class: 4 }, 'api_request_log_status_idx'],
    ['2xx (most rows: the primary key, filtered)', { status_class: 2 }, 'api_request_log_pkey'],
    ['a request id', { request_id: 'req-1234' }, 'api_request_log_request_id_idx'],
    [
      'a request id that is a UUID (the server made it, or a client sent one)',
      { request_id: newId() },
      ['api_request_log_request_id_idx', 'api_request_log_pkey'],
    ],
  ] as const)('lists %s through %s', async (_name, filter, index) => {
    const statements = await statementsOf((db) => logRepo.list(db, scope(), { page: 1, items_per_page: 50, ...filter }));
    expect(statements).toHaveLength(2); // the page and its capped count
    for (const statement of statements) {
      const plan = await planOf(statement);
      expect(plan).not.toMatch(/Seq Scan/);
      if (/order by/.test(statement.sql)) for (const name of [index].flat()) expect(plan).toContain(name);
    }
  });

  // A LIKE prefix becomes an index range only in a plan made with its value. Before, the pattern
  // was a parameter, and the generic plan a prepared statement can switch to walked the
  // business's whole log by the primary key, filtering each row by its path (`Filter: (path ~~
  // $3)`): the longer the history, the slower a search for a rare path. The pattern is now a
  // constant of the statement, so even the generic plan is a range of the path index.
  it.each(['/v1/customers', "/v1/it's_100%\\"])(
    'lists a rare path prefix (%s) through api_request_log_path_idx, generic plan too',
    async (path) => {
      const statements = await statementsOf((db) => logRepo.list(db, scope(), { page: 1, items_per_page: 50, path }));
      expect(statements).toHaveLength(2);
      for (const statement of statements) {
        const plan = await planOf(statement, 'generic');
        expect(plan).toContain('api_request_log_path_idx');
        expect(plan).toMatch(/Index Cond: .*path ~>=~/);
      }
    },
  );

  it('plans a common path prefix with its value too (one request in twenty: newest first, filtered)', async () => {
    const statements = await statementsOf((db) => logRepo.list(db, scope(), { page: 1, items_per_page: 50, path: '/v1/transfers' }));
    for (const statement of statements) expect(await planOf(statement, 'generic')).not.toMatch(/path ~~ \$/);
  });

  it('matches a path prefix exactly, whatever characters it holds', async () => {
    const odd = ["/v1/it's", '/v1/a_b', '/v1/a%b', '/v1/back\\slash', '/v1/ünï'];
    await insertLog(
      [...odd, '/v1/itxs', '/v1/axb', '/v1/axxb', '/v1/back/slash'].map((path, i) =>
        logRow(new Date(Date.now() - 1000 + i), { tenant_id: busy, path }),
      ),
    );
    for (const path of odd) {
      const page = await logRepo.list(t.db, scope(), { page: 1, items_per_page: 50, path });
      expect(page.items.map((r) => r.path)).toEqual([path]);
    }
  });

  it('finds one request, and retention deletes old rows, through the primary key', async () => {
    const [find] = await statementsOf((db) => logRepo.find(db, scope(), newId()));
    expect(await planOf(find!)).toContain('api_request_log_pkey');
    const cutoffId = uuidv7LowerBound(new Date(Date.now() - 86_400_000));
    const [purge] = await statementsOf((db) => logRepo.deleteBeforePerTenant(db, [{ tenantId: busy, cutoffId }], 10));
    const plan = await planOf(purge!);
    // Each probe of the log starts at its business: no scan of the whole index for an id.
    const conditions = plan.split('\n').filter((line) => line.includes('Index Cond'));
    expect(conditions.length).toBeGreaterThan(0);
    for (const condition of conditions) expect(condition).toContain('tenant_id');
    expect(plan).not.toMatch(/Seq Scan/);
  });
});

describe('request log switched off', () => {
  it('records nothing with REQUEST_LOG=off', async () => {
    const off = await startTestApp({ REQUEST_LOG: 'off' });
    try {
      const tenant = await off.tenant('Quiet');
      expect((await clientFor(off, tenant.sandbox.secret_key).get('/v1/customers')).status).toBe(200);
      expect(off.app.requestLog).toBeNull();
      const n = await off.db
        .selectFrom('api_request_log')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .executeTakeFirstOrThrow();
      expect(Number(n.n)).toBe(0);
    } finally {
      await off.close();
    }
  });
});
