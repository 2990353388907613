import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../src/lib/money.js';
import { buildCamt053, buildPain002 } from '../../src/modules/bank-files/bank-replies.js';
import { dispatchPendingPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKycLive } from '../kyc-helpers.js';
import { nubans, payoutBody, verifiedPayee } from '../payout-fixtures.js';
import { PLATFORM, camt054, folderConnection, ngnCredit } from '../bank-files/fixtures.js';
import { operator, type OpsAgent } from './helpers.js';

/** The console's bank pages over HTTP: connections, files, the exceptions queue, reconciliation, run now. */
const TOKEN = 'operator-token-of-the-console-bank-tests-0123456789';
const today = new Date().toISOString().slice(0, 10);

let t: TestApp;
let live: Client;
let dir: string;
let connectionId: string;
let acc: { id: string; account_number: string };
let payoutId: string;
let viewer: OpsAgent;
let operations: OpsAgent;
let operations2: OpsAgent;
let admin: OpsAgent;

const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
const api = (method: 'GET' | 'POST', url: string, body?: unknown) => t.request(method, `/operator/v1/bank${url}`, body, auth);
const credit = ngnCredit;
const importing = (content: string, filename: string) => api('POST', `/connections/${connectionId}/files`, { filename, content });
const balance = async () => (await live.get(`/v1/accounts/${acc.id}`)).body.data.balance as string;
const auditRows = (action: string, target?: string) => {
  let q = t.db.selectFrom('ops_audit_log').selectAll().where('action', '=', action);
  if (target) q = q.where('target_id', '=', target);
  return q.execute();
};
const openExceptions = async () =>
  (await api('GET', `/exceptions?status=open`)).body.data as { id: string; amount: string; reference: string | null }[];

beforeAll(async () => {
  t = await startTestApp({ OPERATOR_API_TOKEN: TOKEN, SANDBOX_RAIL_DELAY_MS: 0 });
  dir = mkdtempSync(join(tmpdir(), 'ops-bank-'));
  const tenant = await t.tenant('Console Bank Co');
  live = clientFor(t, tenant.live.secret_key);
  const customer = (await live.post('/v1/customers', johnDoe())).body.data.id as string;
  await approveKycLive(t.db, tenant.tenant_id, live, customer);
  acc = (await live.post('/v1/accounts', { currency: 'NGN', label: 'main', customer_id: customer })).body.data;
  const conn = await api('POST', '/connections', folderConnection(dir));
  expect(conn.status, conn.text).toBe(201);
  connectionId = conn.body.data.id;
  // Funds in, and two credits to an account number nobody holds (the exceptions).
  const funded = await importing(
    camt054('FUND', [
      credit('FUND1', '1000.00', acc.account_number),
      credit('LOST1', '25.00', '5555555555', { payerName: 'Mystery Payer', reference: 'INV-77' }),
      credit('LOST2', '7.50', '5555555556', { payerName: 'Wrong Bank' }),
    ]),
    'camt054-fund.xml',
  );
  expect(funded.status, funded.text).toBe(200);
  const payee = await verifiedPayee(t, live, customer, nubans(610000)());
  const pay = await live.post('/v1/transfer', { ...payoutBody(acc.id, payee, '100.00'), customer_id: customer });
  expect(pay.status, pay.text).toBe(200);
  payoutId = pay.body.data.id;
  await dispatchPendingPayouts(t.db, { SANDBOX_RAIL_DELAY_MS: 0 });
  viewer = (await operator(t, 'viewer')).agent;
  operations = (await operator(t, 'operations')).agent;
  operations2 = (await operator(t, 'operations')).agent;
  admin = (await operator(t, 'admin')).agent;
}, 90_000);
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('cut and exchange now', () => {
  it('a viewer sees the connection without the button and is refused the action', async () => {
    const page = await viewer.get(`/ops/bank/connections/${connectionId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Folder Bank');
    expect(page.body).not.toContain('Cut and exchange now</button>');
    const refused = await viewer.post(`/ops/bank/connections/${connectionId}/exchange`, { reason: 'try' });
    expect(refused.statusCode).toBe(403);
    expect(existsSync(join(dir, 'out')) ? readdirSync(join(dir, 'out')) : []).toHaveLength(0);
  });

  it('needs the CSRF token and a reason', async () => {
    await operations.get(`/ops/bank/connections/${connectionId}`);
    expect((await operations.post(`/ops/bank/connections/${connectionId}/exchange`, { reason: 'x', _csrf: null })).statusCode).toBe(403);
    expect((await operations.post(`/ops/bank/connections/${connectionId}/exchange`, { reason: '' })).statusCode).toBe(400);
    expect(await auditRows('bank.exchange', connectionId)).toHaveLength(0);
  });

  it('operations cuts the pain.001, delivers it to the folder, and it is audited', async () => {
    await operations.get(`/ops/bank/connections/${connectionId}`);
    const res = await operations.post(`/ops/bank/connections/${connectionId}/exchange`, { reason: 'bank window closes at 3' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toMatch(/Exchange done: cut [^;]+; delivered 1/);
    expect(readdirSync(join(dir, 'out'))).toHaveLength(1);
    const rows = await auditRows('bank.exchange', connectionId);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.reason).toBe('bank window closes at 3');
    expect(rows[0]!.detail).toMatchObject({ delivered: [expect.stringMatching(/\.xml$/)] });
  });
});

describe('files sent and received', () => {
  it('lists both ways and shows a file escaped, with its summary and payouts, downloadable', async () => {
    const files = (await api('GET', `/files?connection_id=${connectionId}`)).body.data as {
      id: string;
      kind: string;
      filename: string;
      checksum: string;
      message_id: string;
    }[];
    const pain = files.find((f) => f.kind === 'pain.001')!;
    expect(pain).toBeDefined();
    const list = await viewer.get('/ops/bank');
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain(pain.filename);
    expect(list.body).toContain('camt054-fund.xml');
    const page = await viewer.get(`/ops/bank/files/${pain.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('&lt;Document');
    expect(page.body).not.toMatch(/<Document/);
    expect(page.body).toContain(pain.checksum);
    expect(page.body).toContain(pain.message_id);
    expect(page.body).toContain(`/ops/payouts/${payoutId}`);
    const dl = await viewer.get(`/ops/bank/files/${pain.id}/download`);
    expect(dl.statusCode).toBe(200);
    expect(dl.headers['content-type']).toMatch(/^application\/xml/);
    expect(dl.headers['content-disposition']).toContain(`attachment; filename="${pain.filename}"`);
    expect(dl.body).toContain('<Document');
    expect(dl.body).toContain('pain.001');
    const camt = files.find((f) => f.filename === 'camt054-fund.xml')!;
    const inbound = await viewer.get(`/ops/bank/files/${camt.id}`);
    expect(inbound.body).toContain('LOST1');
    expect(inbound.body).toContain('received from the bank');
    expect((await viewer.get('/ops/bank/files/00000000-0000-0000-0000-000000000000')).statusCode).toBe(404);
    expect((await viewer.get('/ops/bank/files/not-an-id/download')).statusCode).toBe(404);
  });

  it("the payout page names its bank file and the bank's status from the pain.002", async () => {
    const files = (await api('GET', `/files?connection_id=${connectionId}`)).body.data as {
      kind: string;
      filename: string;
      message_id: string;
    }[];
    const pain = files.find((f) => f.kind === 'pain.001')!;
    const report = buildPain002({
      messageId: 'STS1',
      createdAt: new Date(),
      originalMessageId: pain.message_id,
      groupStatus: 'ACSP',
      transactions: [],
    });
    expect((await importing(report, 'pain002.xml')).status).toBe(200);
    const page = await viewer.get(`/ops/payouts/${payoutId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Bank files');
    expect(page.body).toContain(pain.filename);
    expect(page.body).toContain(pain.message_id);
    expect(page.body).toMatch(/badge-(accepted|submitted)/);
  });
});

describe('the exceptions queue', () => {
  it('two operators assign the same credit at once: one wins, the other is told, the account is credited once, audited', async () => {
    const lost = (await openExceptions()).find((e) => e.amount === '25.00')!;
    expect(lost).toBeDefined();
    const queue = await viewer.get('/ops/bank/exceptions');
    expect(queue.body).toContain('Mystery Payer');
    expect(queue.body).not.toContain(`/ops/bank/exceptions/${lost.id}/assign`);
    expect((await viewer.post(`/ops/bank/exceptions/${lost.id}/assign`, { account_id: acc.id, reason: 'x' })).statusCode).toBe(403);

    const before = await balance();
    await operations.get('/ops/bank/exceptions');
    await operations2.get('/ops/bank/exceptions');
    expect(operations.lastHtml).toContain(`/ops/bank/exceptions/${lost.id}/assign`);
    expect((await operations.post(`/ops/bank/exceptions/${lost.id}/assign`, { account_id: acc.id, reason: '' })).statusCode).toBe(400);
    expect(
      (await operations.post(`/ops/bank/exceptions/${lost.id}/assign`, { account_id: acc.id, reason: 'y', _csrf: null })).statusCode,
    ).toBe(403);
    const [a, b] = await Promise.all([
      operations.post(`/ops/bank/exceptions/${lost.id}/assign`, { account_id: acc.id, reason: 'payer phoned, invoice INV-77' }),
      operations2.post(`/ops/bank/exceptions/${lost.id}/assign`, { account_id: acc.id, reason: 'same payer' }),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([303, 409]);
    expect([a, b].find((r) => r.statusCode === 409)!.body).toContain('already assigned');
    expect(parseAmount(await balance(), 'NGN') - parseAmount(before, 'NGN')).toBe(2500n);
    const rows = await auditRows('bank.exception.assigned', lost.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.detail).toMatchObject({ account_id: acc.id, amount: '25.00' });
    const assigned = await viewer.get('/ops/bank/exceptions?status=assigned');
    expect(assigned.body).toContain(acc.id);
  });

  it('admin marks the other returned to sender; a wrong account is refused and changes nothing', async () => {
    const other = (await openExceptions()).find((e) => e.amount === '7.50')!;
    await admin.get('/ops/bank/exceptions');
    const wrong = await admin.post(`/ops/bank/exceptions/${other.id}/assign`, {
      account_id: '00000000-0000-0000-0000-000000000000',
      reason: 'guess',
    });
    expect(wrong.statusCode).toBe(404);
    const before = await balance();
    const res = await admin.post(`/ops/bank/exceptions/${other.id}/return`, { reason: 'bank returned it, ref R-9' });
    expect(res.statusCode).toBe(303);
    expect(await balance()).toBe(before);
    expect(await openExceptions()).toHaveLength(0);
    expect(await auditRows('bank.exception.returned', other.id)).toHaveLength(1);
    expect(await auditRows('bank.exception.assigned', other.id)).toHaveLength(0);
    const again = await admin.post(`/ops/bank/exceptions/${other.id}/return`, { reason: 'twice' });
    expect(again.statusCode).toBe(409);
  });
});

describe('reconciliation', () => {
  it('shows a statement that breaks with its difference and explanation', async () => {
    const statement = buildCamt053({
      messageId: 'STMT1',
      createdAt: new Date(),
      reportId: 'STMT-1',
      account: PLATFORM,
      currency: 'NGN',
      entries: [],
      opening: 0n,
      closing: 123456n,
      date: today,
    });
    expect((await importing(statement, 'camt053.xml')).status).toBe(200);
    const rec = (await api('GET', `/reconciliations?connection_id=${connectionId}`)).body.data[0];
    expect(rec.status).toBe('break');
    const page = await viewer.get('/ops/bank/reconciliations');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('STMT-1');
    expect(page.body).toContain('1234.56 NGN');
    expect(page.body).toContain(`${rec.difference} NGN`);
    expect(page.body).toContain('badge-break');
    expect(page.body).toContain('unexplained');
  });
});
