import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { balances, newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/** The dashboard's Approvals page: settings, the list, approve / reject with CSRF, roles, audit log. */
let t: TestApp;
let owner: Agent;
let api: Client;
let usd: string;
let ngn: string;
let customer: string;

const email = (who: string) => `${who}+${newId().slice(-12)}@example.com`;

async function join(inviter: Agent, role: string): Promise<Agent> {
  await inviter.get('/dashboard/team');
  expect((await inviter.post('/dashboard/team/invite', { email: email(role), role })).statusCode).toBe(303);
  await inviter.get('/dashboard/team');
  const path = new URL(inviter.textOf('one-time-link')!).pathname;
  const member = new Agent(t);
  await member.get(path);
  expect((await member.post(path, { password: 'another long password' })).statusCode).toBe(303);
  return member;
}

beforeAll(async () => {
  t = await startTestApp();
  owner = new Agent(t);
  await owner.signup(email('owner'));
  await owner.get('/dashboard/keys');
  api = clientFor(t, owner.textOf('new-secret-sandbox')!);
  customer = await newCustomer(api);
  usd = await openAccount(api, 'USD', customer, '100.00');
  ngn = await openAccount(api, 'NGN', customer, '1000.00');
});
afterAll(() => t.close());

const order = (amount = '10.00') =>
  api.post('/v1/fx/orders', {
    customer_id: customer,
    order_type: 'market',
    side: 'sell',
    pair: { base: 'USD', quote: 'NGN' },
    amount,
    source_id: usd,
    destination_id: ngn,
  });

const approvalIdOf = async (subjectId: string) =>
  (await t.db.selectFrom('approvals').select('id').where('subject_id', '=', subjectId).executeTakeFirstOrThrow()).id;

describe('dashboard approvals', () => {
  it('is off by default; an owner turns FX approvals on for this environment, which the API then applies', async () => {
    const off = await order('1.00');
    expect(off.body.data.status).toBe('completed');
    const page = await owner.get('/dashboard/approvals');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Nothing is waiting for approval.');
    expect(page.body).toContain('href="/dashboard/approvals"');
    // A bad threshold is refused with a message, nothing stored.
    const bad = await owner.post('/dashboard/approvals/settings', { fx_orders: 'on', payouts_above: 'dollars', expire_after_hours: '24' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('is not a currency and an amount');
    // Without the CSRF token nothing changes.
    expect((await owner.post('/dashboard/approvals/settings', { _csrf: null, fx_orders: 'on' })).statusCode).toBe(403);
    await owner.get('/dashboard/approvals');
    const saved = await owner.post('/dashboard/approvals/settings', {
      fx_orders: 'on',
      payouts_above: 'NGN 5000.00',
      expire_after_hours: '12',
    });
    expect(saved.statusCode).toBe(303);
    const again = await owner.get('/dashboard/approvals');
    expect(again.body).toMatch(/id="ap-fx" name="fx_orders" type="checkbox" value="on" checked/);
    expect(again.body).not.toMatch(/id="ap-payees"[^>]* checked/);
    expect(again.body).toContain('value="NGN 5000.00"');
    await expect.poll(async () => (await order('1.00')).body.data.status, { timeout: 5000 }).toBe('waiting_approval');
  });

  it('lists a waiting order; viewers and developers see it but may not decide; an admin approves it, once', async () => {
    const o = (await order()).body.data;
    expect(o.status).toBe('waiting_approval');
    const id = await approvalIdOf(o.id);
    const viewer = await join(owner, 'viewer');
    const dev = await join(owner, 'developer');
    const admin = await join(owner, 'admin');
    const seen = await viewer.get('/dashboard/approvals');
    expect(seen.body).toContain('sell 10.00 USD for NGN');
    expect(seen.body).not.toContain(`/dashboard/approvals/${id}/approve`);
    for (const who of [viewer, dev]) {
      await who.get('/dashboard/approvals');
      expect((await who.post(`/dashboard/approvals/${id}/approve`)).statusCode).toBe(403);
      expect((await who.post('/dashboard/approvals/settings', { fx_orders: '' })).statusCode).toBe(403);
    }
    const page = await admin.get('/dashboard/approvals');
    expect(page.body).toContain(`action="/dashboard/approvals/${id}/approve"`);
    expect((await admin.post(`/dashboard/approvals/${id}/approve`, { _csrf: 'forged' })).statusCode).toBe(403);
    const before = await balances(api, usd);
    expect((await admin.post(`/dashboard/approvals/${id}/approve`)).statusCode).toBe(303);
    const done = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    expect(done.status).toBe('completed');
    expect(done.approved_by_user_id).toBeTruthy();
    expect((await balances(api, usd)).balance).toBe((Number(before.balance) - 10).toFixed(2));
    // A second approval (another tab, the owner) is refused and changes nothing.
    await owner.get('/dashboard/approvals');
    const twice = await owner.post(`/dashboard/approvals/${id}/approve`);
    expect(twice.statusCode).toBe(409);
    expect(twice.body).toContain('already approved');
    expect((await balances(api, usd)).balance).toBe((Number(before.balance) - 10).toFixed(2));
    // Shown under its status, with who decided.
    expect((await owner.get('/dashboard/approvals?status=approved')).body).toContain('admin+');
  });

  it('rejects with a reason: the hold is released and the audit log records both decisions', async () => {
    const pending = await api.get('/v1/fx/orders/pending-approvals');
    for (const o of pending.body.data.items) {
      await owner.get('/dashboard/approvals');
      expect((await owner.post(`/dashboard/approvals/${await approvalIdOf(o.id)}/reject`, { reason: 'wrong account' })).statusCode).toBe(
        303,
      );
    }
    expect((await api.get('/v1/fx/orders/pending-approvals')).body.data.items).toEqual([]);
    const rejected = (await api.get('/v1/fx/orders?status=rejected')).body.data.items;
    expect(rejected.length).toBeGreaterThan(0);
    expect(rejected[0]).toMatchObject({ rejection_reason: 'wrong account' });
    const usdNow = await balances(api, usd);
    expect(usdNow.available).toBe(usdNow.balance);
    const audit = await owner.get('/dashboard/audit?action=approval.rejected');
    expect(audit.body).toContain('wrong account');
    expect((await owner.get('/dashboard/audit?action=approval.approved')).body).toContain('fx_order');
    expect((await owner.get('/dashboard/audit?action=approvals.settings_changed')).body).toContain('sandbox');
    // Another business's request, and the other environment's list: nothing to see or decide.
    const other = new Agent(t);
    await other.signup(email('other'));
    await other.get('/dashboard/approvals?status=');
    expect(other.lastHtml).not.toContain('sell 10.00 USD');
    expect((await other.post(`/dashboard/approvals/${await approvalIdOf(rejected[0].id)}/approve`)).statusCode).toBe(404);
    await owner.get('/dashboard/approvals');
    await owner.post('/dashboard/environment', { environment: 'live', back: 'approvals' });
    const liveList = await owner.get('/dashboard/approvals?status=');
    expect(liveList.body).toContain('No requests match.');
    expect(liveList.body).toContain('When approval is needed (live)');
    expect(liveList.body).not.toMatch(/id="ap-fx"[^>]* checked/); // the sandbox setting is not live's
    await owner.post('/dashboard/environment', { environment: 'sandbox', back: 'approvals' });
    // Unknown or malformed ids are 404 pages.
    expect((await owner.post(`/dashboard/approvals/${newId()}/approve`)).statusCode).toBe(404);
    expect((await owner.post('/dashboard/approvals/nope/approve')).statusCode).toBe(404);
  });
});
