import { authenticator } from 'otplib';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reviewCase } from '../../src/modules/kyc/service.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { createOperator } from '../../src/ops/service.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { liveCaseInReview, livePayout, nextCode, operator, OpsAgent, PASSWORD, sessionAgent } from './helpers.js';

/**
 * The operator console over HTTP: accounts and sessions (setup link, TOTP, limits, CSRF), roles,
 * the KYC queue and decisions (the CLI's code path, one winner of two), payouts by hand, the
 * businesses' settings and live freeze, and the append-only audit log.
 */
let t: TestApp;
let biz: CreatedTenant;
let live: Client;

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  biz = await t.tenant('Queue Ltd');
  live = clientFor(t, biz.live.secret_key);
});
afterAll(async () => t?.close());

const auditRows = (action: string) => t.db.selectFrom('ops_audit_log').selectAll().where('action', '=', action).orderBy('id').execute();

describe('operators: setup link, second factor, sessions', () => {
  it('sets a password through the one-time link, enrols TOTP, then logs in only with a fresh code', async () => {
    const created = await createOperator(t.db, { operatorId: null, email: 'cli' }, 'First.Admin@Ops.example.com', 'admin');
    expect(created.email).toBe('first.admin@ops.example.com');
    const a = new OpsAgent(t);
    expect((await a.get(created.setupPath)).statusCode).toBe(200);
    expect((await a.post(created.setupPath, { password: 'short' })).statusCode).toBe(400);
    const done = await a.post(created.setupPath, { password: PASSWORD });
    expect(done.statusCode).toBe(303);
    expect(done.headers['set-cookie']!.toString()).toMatch(/fso_session=[\w-]{43}; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict/);
    // The link works once.
    expect((await new OpsAgent(t).get(created.setupPath)).statusCode).toBe(404);

    await a.get('/ops/profile');
    expect((await a.post('/ops/profile/totp/start')).statusCode).toBe(303);
    const page = await a.get('/ops/profile');
    const secret = /id="totp-secret"[^>]*>([A-Z2-7]+)</.exec(page.body)![1]!;
    expect(page.body).toContain(`otpauth://totp/`);
    expect((await a.post('/ops/profile/totp/confirm', { code: '000000' })).statusCode).toBe(400);
    expect((await a.post('/ops/profile/totp/confirm', { code: authenticator.generate(secret) })).statusCode).toBe(200);
    await a.post('/ops/logout');
    expect((await a.get('/ops/kyc')).headers.location).toBe('/ops/login');

    const b = new OpsAgent(t);
    expect((await b.login(created.email)).statusCode).toBe(401); // no code
    const code = nextCode(secret);
    const ok = await b.login(created.email, code);
    expect(ok.statusCode).toBe(303);
    expect((await b.get('/ops/operators')).statusCode).toBe(200);
    // The same code again is a replay: refused.
    const c = new OpsAgent(t);
    const replay = await c.login(created.email, code);
    expect(replay.statusCode).toBe(401);
    expect(replay.body).toContain('authentication code is not correct');
    const logins = await auditRows('operator.login');
    expect(logins.filter((r) => r.operator_email === created.email)).toHaveLength(1);
  });

  it('limits failed log-ins per email (429 with Retry-After)', async () => {
    const { email } = await operator(t, 'viewer');
    const a = new OpsAgent(t);
    for (let i = 0; i < 5; i++) expect((await a.login(email, '', 'wrong password!')).statusCode).toBe(401);
    const blocked = await a.login(email);
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('refuses a POST without the CSRF token or from another site', async () => {
    const { agent } = await operator(t, 'admin');
    await agent.get('/ops/operators');
    expect((await agent.post('/ops/operators', { _csrf: null, email: 'x@ops.example.com', role: 'viewer' })).statusCode).toBe(403);
    expect((await agent.post('/ops/operators', { _csrf: 'A'.repeat(43), email: 'x@ops.example.com', role: 'viewer' })).statusCode).toBe(
      403,
    );
    const cross = await agent.post('/ops/operators', { email: 'x@ops.example.com', role: 'viewer' }, { origin: 'https://evil.example' });
    expect(cross.statusCode).toBe(403);
    expect(await t.db.selectFrom('ops_operators').select('id').where('email', '=', 'x@ops.example.com').execute()).toHaveLength(0);
    // The log-in form needs its double-submit token too.
    const anon = new OpsAgent(t);
    expect((await anon.post('/ops/login', { _csrf: null, email: 'a@b.c', password: 'x' })).statusCode).toBe(403);
  });

  it('an admin adds an operator in the console; the link is shown once; other roles cannot', async () => {
    const { agent } = await operator(t, 'admin');
    await agent.get('/ops/operators');
    const res = await agent.post('/ops/operators', { email: 'new.analyst@ops.example.com', role: 'compliance' });
    expect(res.statusCode).toBe(200);
    const link = /http:\/\/[^<]*(\/ops\/setup\/[\w-]{43})/.exec(res.body)![1]!;
    expect((await new OpsAgent(t).get(link)).statusCode).toBe(200);
    expect((await agent.post('/ops/operators', { email: 'new.analyst@ops.example.com', role: 'compliance' })).statusCode).toBe(409);
    expect((await agent.post('/ops/operators', { email: 'y@ops.example.com', role: 'owner' })).statusCode).toBe(400);
    const { agent: ops } = await operator(t, 'operations');
    expect((await ops.get('/ops/operators')).statusCode).toBe(403);
  });

  it('a business user’s dashboard session opens nothing under /ops', async () => {
    const signup = await t.app.inject({ method: 'GET', url: '/dashboard/signup' });
    const preauth = /fsd_csrf=([\w-]+)/.exec(String(signup.headers['set-cookie']))![1]!;
    const made = await t.app.inject({
      method: 'POST',
      url: '/dashboard/signup',
      headers: { cookie: `fsd_csrf=${preauth}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        _csrf: preauth,
        business_name: 'Dash Co',
        email: 'owner@dash.example.com',
        password: 'correct horse battery',
      }).toString(),
    });
    expect(made.statusCode).toBe(303);
    const cookie = String(made.headers['set-cookie']).split(';')[0]!;
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/business', headers: { cookie } })).statusCode).toBe(200);
    for (const url of ['/ops/kyc', '/ops/payouts', '/ops/businesses', '/ops/audit', '/ops/audit.csv']) {
      const res = await t.app.inject({ method: 'GET', url, headers: { cookie } });
      expect(res.statusCode, url).toBe(303);
      expect(res.headers.location).toBe('/ops/login');
    }
    // Not even with the dashboard's token renamed to the console's cookie.
    const token = cookie.split('=')[1]!;
    const renamed = await t.app.inject({ method: 'GET', url: '/ops/kyc', headers: { cookie: `fso_session=${token}` } });
    expect(renamed.headers.location).toBe('/ops/login');
  });
});

describe('KYC review', () => {
  it('lists cases waiting, oldest first, with filters', async () => {
    const first = await liveCaseInReview(t, live, { first_name: 'Oldest', last_name: 'Case' });
    const second = await liveCaseInReview(t, live, { first_name: 'Newer', last_name: 'Case' });
    const { agent } = await operator(t, 'compliance');
    const page = await agent.get('/ops/kyc');
    expect(page.statusCode).toBe(200);
    expect(page.body.indexOf(first.caseId)).toBeGreaterThan(0);
    expect(page.body.indexOf(first.caseId)).toBeLessThan(page.body.indexOf(second.caseId));
    expect((await agent.get(`/ops/kyc?business=${biz.tenant_id}&level=basic`)).body).toContain(second.caseId);
    expect((await agent.get('/ops/kyc?level=intermediate')).body).not.toContain(second.caseId);
    expect((await agent.get('/ops/kyc?environment=sandbox')).body).not.toContain(second.caseId);
    expect((await agent.get('/ops/kyc?environment=live')).body).toContain(second.caseId);
    expect((await agent.get('/ops/kyc?min_age_hours=5')).body).not.toContain(second.caseId);
  });

  it('shows the case with its documents to compliance, never cached; not to operations', async () => {
    const { caseId } = await liveCaseInReview(t, live, { first_name: 'Doc', last_name: 'Viewer' });
    const { agent } = await operator(t, 'compliance');
    const page = await agent.get(`/ops/kyc/${caseId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Compliance checks');
    expect(page.body).toMatch(/<th[^>]*>Check<\/th>/);
    const src = /<img src="(\/ops\/kyc\/documents\/[\w-]+)"/.exec(page.body)![1]!;
    const img = await agent.get(src);
    expect(img.statusCode).toBe(200);
    expect(img.headers['content-type']).toBe('image/png');
    expect(img.headers['cache-control']).toBe('no-store');
    expect(img.rawPayload.subarray(0, 4).toString('hex')).toBe('89504e47');

    // A PDF is framed in the page, from this console only.
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');
    const customerId = (await t.db.selectFrom('kyc_cases').select('customer_id').where('id', '=', caseId).executeTakeFirstOrThrow())
      .customer_id;
    const up = await live.post('/v1/customers/kyc/upload-document', {
      customer_id: customerId,
      metadata: { idDocType: 'PROOF_OF_ADDRESS', country: 'NGA' },
      content: pdf,
      filename: 'bill.pdf',
    });
    expect(up.status).toBe(200);
    const withPdf = await agent.get(`/ops/kyc/${caseId}`);
    const frame = /<iframe src="(\/ops\/kyc\/documents\/[\w-]+)"/.exec(withPdf.body)![1]!;
    expect(withPdf.headers['content-security-policy']).toContain("frame-src 'self'");
    const file = await agent.get(frame);
    expect(file.headers['content-type']).toBe('application/pdf');
    expect(file.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(file.headers['content-security-policy']).toContain("frame-ancestors 'self'");
    expect(file.headers['cache-control']).toBe('no-store');

    const { agent: ops } = await operator(t, 'operations');
    const seen = await ops.get(`/ops/kyc/${caseId}`);
    expect(seen.statusCode).toBe(200);
    expect(seen.body).not.toContain('/ops/kyc/documents/');
    expect(seen.body).not.toContain('Approve');
    expect((await ops.get(src)).statusCode).toBe(403);
    expect((await new OpsAgent(t).get(src)).headers.location).toBe('/ops/login');
    expect((await auditRows('kyc.document_viewed')).some((r) => r.target_id === src.split('/').pop())).toBe(true);
  });

  it('approves through the CLI’s code path: the case, the customer and the event; audited', async () => {
    const { caseId, customerId } = await liveCaseInReview(t, live, { first_name: 'To', last_name: 'Approve' });
    const { agent, email } = await operator(t, 'compliance');
    await agent.get(`/ops/kyc/${caseId}`);
    const version = /name="version" value="([^"]+)"/.exec(agent.lastHtml)![1]!;
    const res = await agent.post(`/ops/kyc/${caseId}/decide`, { decision: 'approve', version, reason: 'documents match' });
    expect(res.statusCode).toBe(303);
    expect((await live.get(`/v1/customers/${customerId}`)).body.data.kyc_status).toBe('approved');
    const events = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', customerId).execute();
    expect(events.map((e) => e.event_type)).toContain('customer.kyc.status.approved');
    const [row] = (await auditRows('kyc.approved')).filter((r) => r.target_id === caseId);
    expect(row).toMatchObject({
      operator_email: email,
      target_type: 'kyc_case',
      tenant_id: biz.tenant_id,
      environment: 'live',
      reason: 'documents match',
    });
    expect((await agent.get(`/ops/kyc/${caseId}`)).body).toContain('kyc.approved');
  });

  it('two operators deciding at once: one wins, the other is told and changes nothing', async () => {
    const { caseId, customerId } = await liveCaseInReview(t, live, { first_name: 'Race', last_name: 'Case' });
    const a = (await operator(t, 'compliance')).agent;
    const b = (await operator(t, 'compliance')).agent;
    await a.get(`/ops/kyc/${caseId}`);
    await b.get(`/ops/kyc/${caseId}`);
    const version = /name="version" value="([^"]+)"/.exec(a.lastHtml)![1]!;
    const [ra, rb] = await Promise.all([
      a.post(`/ops/kyc/${caseId}/decide`, { decision: 'approve', version }),
      b.post(`/ops/kyc/${caseId}/decide`, { decision: 'reject', version, label: 'FORGERY', reject_type: 'FINAL', reason: 'edited photo' }),
    ]);
    const statuses = [ra.statusCode, rb.statusCode].sort();
    expect(statuses).toEqual([303, 409]);
    const loser = ra.statusCode === 409 ? ra : rb;
    expect(loser.body).toContain('decided or changed by someone else');
    const decided = await t.db.selectFrom('kyc_cases').select('status').where('id', '=', caseId).executeTakeFirstOrThrow();
    expect(decided.status).toBe(ra.statusCode === 303 ? 'approved' : 'rejected');
    const events = await t.db
      .selectFrom('events')
      .select('event_type')
      .where('event_group_id', '=', customerId)
      .where('event_type', 'in', ['customer.kyc.status.approved', 'customer.kyc.status.rejected'])
      .execute();
    expect(events).toHaveLength(1);
    const audited = await t.db
      .selectFrom('ops_audit_log')
      .select('action')
      .where('target_id', '=', caseId)
      .where('action', '!=', 'kyc.document_viewed')
      .execute();
    expect(audited).toHaveLength(1);
  });

  it('rejects FINAL with a label and a reason; requests more documents as a RETRY rejection', async () => {
    const { agent } = await operator(t, 'compliance');
    const one = await liveCaseInReview(t, live, { first_name: 'Final', last_name: 'Reject' });
    await agent.get(`/ops/kyc/${one.caseId}`);
    let version = /name="version" value="([^"]+)"/.exec(agent.lastHtml)![1]!;
    expect(
      (await agent.post(`/ops/kyc/${one.caseId}/decide`, { decision: 'reject', version, label: 'FORGERY', reject_type: 'FINAL' }))
        .statusCode,
    ).toBe(400);
    expect(
      (
        await agent.post(`/ops/kyc/${one.caseId}/decide`, {
          decision: 'reject',
          version,
          label: 'FORGERY',
          reject_type: 'FINAL',
          reason: 'photo edited',
        })
      ).statusCode,
    ).toBe(303);
    const status = (await live.get(`/v1/customers/kyc/${one.customerId}/status`)).body.data;
    expect(status?.reviewResult ?? status).toBeDefined();
    const row = await t.db.selectFrom('kyc_cases').selectAll().where('id', '=', one.caseId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status: 'rejected', reject_type: 'FINAL', reject_labels: ['FORGERY'] });

    const two = await liveCaseInReview(t, live, { first_name: 'More', last_name: 'Docs' });
    await agent.get(`/ops/kyc/${two.caseId}`);
    version = /name="version" value="([^"]+)"/.exec(agent.lastHtml)![1]!;
    const res = await agent.post(`/ops/kyc/${two.caseId}/decide`, {
      decision: 'request_documents',
      version,
      documents: ['PROOF_OF_ADDRESS', 'PASSPORT'],
      reason: 'passport blurred',
    });
    expect(res.statusCode).toBe(303);
    const row2 = await t.db.selectFrom('kyc_cases').selectAll().where('id', '=', two.caseId).executeTakeFirstOrThrow();
    expect(row2).toMatchObject({
      status: 'rejected',
      reject_type: 'RETRY',
      reject_labels: ['ADDITIONAL_DOCUMENTS_REQUESTED', 'REQUESTED_PROOF_OF_ADDRESS', 'REQUESTED_PASSPORT'],
    });
    const [audited] = (await auditRows('kyc.documents_requested')).filter((r) => r.target_id === two.caseId);
    expect(audited!.detail).toMatchObject({ documents: ['PROOF_OF_ADDRESS', 'PASSPORT'] });
  });

  it('a viewer and operations can read the queue but not decide', async () => {
    const { caseId } = await liveCaseInReview(t, live, { first_name: 'Read', last_name: 'Only' });
    for (const role of ['viewer', 'operations'] as const) {
      const { agent } = await operator(t, role);
      await agent.get(`/ops/kyc/${caseId}`);
      const res = await agent.post(`/ops/kyc/${caseId}/decide`, { decision: 'approve', version: new Date().toISOString() });
      expect(res.statusCode, role).toBe(403);
    }
    expect((await t.db.selectFrom('kyc_cases').select('status').where('id', '=', caseId).executeTakeFirstOrThrow()).status).toBe(
      'manual_review',
    );
  });
});

describe('payouts by hand', () => {
  it('operations settles a live payout with a reason; compliance may not; a second settle is refused', async () => {
    const transferId = await livePayout(t, biz.tenant_id, biz.live.secret_key, async (caseId) => {
      const c = await t.db.selectFrom('kyc_cases').select(['customer_id']).where('id', '=', caseId).executeTakeFirstOrThrow();
      await t.db
        .transaction()
        .execute((trx) => reviewCase(trx, { tenantId: biz.tenant_id, environment: 'live' }, c.customer_id, 'approved'));
    });
    const { agent, email } = await operator(t, 'operations');
    const list = await agent.get('/ops/payouts?status=processing');
    expect(list.body).toContain(transferId);
    const page = await agent.get(`/ops/payouts/${transferId}`);
    expect(page.body).toContain('Rail record');
    expect(page.body).toContain('manual');
    expect((await agent.post(`/ops/payouts/${transferId}/settle`, { reason: '' })).statusCode).toBe(400);

    const { agent: compliance } = await operator(t, 'compliance');
    await compliance.get(`/ops/payouts/${transferId}`);
    expect((await compliance.post(`/ops/payouts/${transferId}/settle`, { reason: 'x' })).statusCode).toBe(403);

    expect((await agent.post(`/ops/payouts/${transferId}/settle`, { reason: 'bank ref 123' })).statusCode).toBe(303);
    expect((await live.get(`/v1/transfers/${transferId}`)).body.data.transfer_status).toBe('completed');
    const again = await agent.post(`/ops/payouts/${transferId}/fail`, { reason: 'late' });
    expect(again.statusCode).toBe(409);
    const settled = (await auditRows('payout.settled')).filter((r) => r.target_id === transferId);
    expect(settled).toHaveLength(1);
    expect(settled[0]).toMatchObject({ operator_email: email, reason: 'bank ref 123', tenant_id: biz.tenant_id });
    const detail = await agent.get(`/ops/payouts/${transferId}`);
    expect(detail.body).toContain('payout.settled');
    expect(detail.body).toMatch(/transfer\.|payout/);
  });
});

describe('businesses', () => {
  it('freezes live API access with a reason (403 live_access_frozen), sandbox unaffected, then lifts it', async () => {
    const other = await t.tenant('Freeze Me Ltd');
    const liveApi = clientFor(t, other.live.secret_key);
    const sandboxApi = clientFor(t, other.sandbox.secret_key);
    expect((await liveApi.get('/v1/customers')).status).toBe(200);
    const { agent } = await operator(t, 'admin');
    await agent.get(`/ops/businesses/${other.tenant_id}`);
    expect((await agent.post(`/ops/businesses/${other.tenant_id}/freeze`, { reason: '' })).statusCode).toBe(400);
    expect((await agent.post(`/ops/businesses/${other.tenant_id}/freeze`, { reason: 'fraud investigation' })).statusCode).toBe(303);
    // Every process's key cache drops the business at the change's notification (milliseconds).
    await expect.poll(async () => (await liveApi.get('/v1/customers')).body.error?.code).toBe('live_access_frozen');
    expect((await liveApi.get('/v1/customers')).status).toBe(403);
    // Every authenticated /v1 route, whatever its method.
    const routes = t.app.apiRoutes.filter((r) => r.url.startsWith('/v1/') && !r.noAuth);
    for (const r of routes) {
      const url = r.url.replace(/:\w+/g, '01a00000-0000-7000-8000-000000000000');
      const res = await t.app.inject({ method: r.method as 'GET', url, headers: { 'api-key': other.live.secret_key } });
      expect(JSON.parse(res.body).error?.code, `${r.method} ${r.url}`).toBe('live_access_frozen');
    }
    expect((await sandboxApi.get('/v1/customers')).status).toBe(200);
    expect((await agent.get(`/ops/businesses/${other.tenant_id}`)).body).toContain('fraud investigation');
    expect((await agent.post(`/ops/businesses/${other.tenant_id}/freeze`, { reason: 'again' })).statusCode).toBe(409);

    const { agent: viewer } = await operator(t, 'viewer');
    await viewer.get(`/ops/businesses/${other.tenant_id}`);
    expect((await viewer.post(`/ops/businesses/${other.tenant_id}/unfreeze`, { reason: 'x' })).statusCode).toBe(403);

    expect((await agent.post(`/ops/businesses/${other.tenant_id}/unfreeze`, { reason: 'cleared' })).statusCode).toBe(303);
    await expect.poll(async () => (await liveApi.get('/v1/customers')).status).toBe(200);
    const audited = await t.db
      .selectFrom('ops_audit_log')
      .select(['action', 'reason'])
      .where('target_id', '=', other.tenant_id)
      .orderBy('id')
      .execute();
    expect(audited).toEqual([
      { action: 'business.live_frozen', reason: 'fraud investigation' },
      { action: 'business.live_unfrozen', reason: 'cleared' },
    ]);
  });

  it('the OpenAPI document declares live_access_frozen on authenticated operations', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const forbidden = JSON.stringify(doc.paths['/v1/customers'].get.responses['403']);
    expect(forbidden).toContain('live_access_frozen');
  });

  it('edits settings validated as the CLI validates them', async () => {
    const other = await t.tenant('Settings Ltd');
    const { agent } = await operator(t, 'admin');
    await agent.get(`/ops/businesses/${other.tenant_id}`);
    const bad = await agent.post(`/ops/businesses/${other.tenant_id}/settings`, { key: 'rate_limit_per_minute', value: '0', reason: 'x' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('Invalid settings');
    expect(
      (await agent.post(`/ops/businesses/${other.tenant_id}/settings`, { key: 'rate_limit_per_minute', value: 'nope', reason: 'x' }))
        .statusCode,
    ).toBe(400);
    expect((await agent.post(`/ops/businesses/${other.tenant_id}/settings`, { key: 'no_such', value: '1', reason: 'x' })).statusCode).toBe(
      400,
    );
    const ok = await agent.post(`/ops/businesses/${other.tenant_id}/settings`, {
      key: 'rate_limit_per_minute',
      value: '120',
      reason: 'bigger client',
    });
    expect(ok.statusCode).toBe(303);
    const row = await t.db.selectFrom('tenants').select('settings').where('id', '=', other.tenant_id).executeTakeFirstOrThrow();
    expect(row.settings).toMatchObject({ rate_limit_per_minute: 120 });
    expect(
      (
        await agent.post(`/ops/businesses/${other.tenant_id}/settings`, {
          key: 'rate_limit_per_minute',
          value: '',
          reason: 'back to default',
        })
      ).statusCode,
    ).toBe(303);
    const reset = await t.db.selectFrom('tenants').select('settings').where('id', '=', other.tenant_id).executeTakeFirstOrThrow();
    expect(reset.settings).not.toHaveProperty('rate_limit_per_minute');
    expect((await auditRows('business.setting_changed')).filter((r) => r.target_id === other.tenant_id)).toHaveLength(2);
    const page = await agent.get(`/ops/businesses`);
    expect(page.body).toContain('Settings Ltd');
  });
});

describe('audit log', () => {
  it('is append-only in the database: UPDATE, DELETE and TRUNCATE are refused', async () => {
    const before = await t.db
      .selectFrom('ops_audit_log')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(Number(before.n)).toBeGreaterThan(0);
    await expect(t.db.updateTable('ops_audit_log').set({ reason: 'rewritten' }).execute()).rejects.toThrow(/append-only/);
    await expect(t.db.deleteFrom('ops_audit_log').execute()).rejects.toThrow(/append-only/);
    await expect(sql`truncate ops_audit_log`.execute(t.db)).rejects.toThrow(/append-only/);
    const after = await t.db
      .selectFrom('ops_audit_log')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  it('is shown in the console and exported as CSV with formula-looking text defused', async () => {
    const other = await t.tenant('Csv Ltd');
    const { agent } = await operator(t, 'admin');
    await agent.get(`/ops/businesses/${other.tenant_id}`);
    await agent.post(`/ops/businesses/${other.tenant_id}/freeze`, { reason: '=HYPERLINK("http://evil.example","x")' });
    const page = await agent.get(`/ops/audit?target=${other.tenant_id}`);
    expect(page.body).toContain('business.live_frozen');
    const csv = await agent.get(`/ops/audit.csv?target=${other.tenant_id}`);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    const lines = csv.body.trim().split('\r\n');
    expect(lines[0]).toBe('at,operator_email,action,target_type,target_id,tenant_id,environment,reason,detail');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(`"'=HYPERLINK(""http://evil.example"",""x"")"`);
    const { agent: viewer } = await operator(t, 'viewer');
    expect((await viewer.get('/ops/audit.csv')).statusCode).toBe(200);
  });
});

describe('sessions', () => {
  it('a disabled operator’s session stops working at once', async () => {
    const target = await operator(t, 'compliance');
    const admin = await sessionAgent(t, (await operator(t, 'admin')).email);
    expect((await target.agent.get('/ops/kyc')).statusCode).toBe(200);
    await admin.get('/ops/operators');
    expect((await admin.post(`/ops/operators/${target.id}/disable`)).statusCode).toBe(303);
    expect((await target.agent.get('/ops/kyc')).headers.location).toBe('/ops/login');
    expect((await new OpsAgent(t).login(target.email)).statusCode).toBe(401);
  });
});
