import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { newId } from '../../src/lib/ids.js';
import { gtbPayee, nubans, payoutBody } from '../payout-fixtures.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { decideApproval, expireDueApprovals } from '../../src/workers/approvals.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

/** Maker-checker on payouts above a threshold and on new payees. */
let t: TestApp;
let api: Client;
let tenantId: string;
let customerId: string;
let ngn: string;
const scope = () => ({ tenantId, environment: 'sandbox' as const });
const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };
const checker = { userId: newId(), email: 'checker@example.com' };

const nuban = nubans(200000);

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Approvals Payout Co');
  tenantId = tenant.tenant_id;
  await setSettings(t.db, tenantId, { approvals: { payouts_above: { NGN: '1000.00' }, new_payees: true } });
  api = clientFor(t, tenant.sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customerId);
  ngn = (await api.post('/v1/accounts', { currency: 'NGN', label: 'acc', customer_id: customerId })).body.data.id;
  expect((await api.post(`/v1/simulations/accounts/${ngn}/fund`, { amount: '100000.00' })).status).toBe(200);
});
afterAll(async () => t?.close());

const approvalOf = (subjectId: string) =>
  t.db.selectFrom('approvals').selectAll().where('subject_id', '=', subjectId).executeTakeFirstOrThrow();
const decide = async (subjectId: string, decision: 'approved' | 'rejected', reason: string | null = null) =>
  decideApproval(t.db, scope(), t.config, (await approvalOf(subjectId)).id, decision, checker, reason);
const eventsOf = async (id: string) =>
  (await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', id).orderBy('id').execute()).map((r) => r.event_type);
const balance = async () => {
  const a = (await api.get(`/v1/accounts/${ngn}`)).body.data;
  return { balance: a.balance, available: a.available_balance };
};

async function newPayee() {
  const res = await api.post('/v1/external-accounts', gtbPayee(customerId, nuban()));
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body.data;
}

async function activePayee() {
  const p = await newPayee();
  await decide(p.id, 'approved');
  await verifyDuePayees(t.db, t.unitOfWork, cfg);
  expect((await api.get(`/v1/external-accounts/${p.id}`)).body.data.status).toBe('active');
  return p.id as string;
}

const pay = (payee: string, amount: string) =>
  api.post('/v1/transfers', payoutBody(ngn, payee, amount, { description: 'supplier', customer_id: customerId }));

async function drain() {
  while (await dispatchPendingPayouts(t.db, cfg));
  while (await settleDueSandboxPayouts(t.db));
}

describe('new payees with approvals on', () => {
  it('stay pending, unverified and unusable for payouts until approved', async () => {
    const p = await newPayee();
    expect(p).toMatchObject({ status: 'pending', approval_status: 'waiting_approval' });
    await verifyDuePayees(t.db, t.unitOfWork, cfg); // the verification job leaves it alone
    expect((await api.get(`/v1/external-accounts/${p.id}`)).body.data.status).toBe('pending');
    const refused = await pay(p.id, '10.00');
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('account_inactive');
    expect((await approvalOf(p.id)).summary).toContain('New payee: Amina Bello');

    await decide(p.id, 'approved');
    expect((await api.get(`/v1/external-accounts/${p.id}`)).body.data).toMatchObject({ status: 'pending', approval_status: 'approved' });
    await verifyDuePayees(t.db, t.unitOfWork, cfg);
    expect((await api.get(`/v1/external-accounts/${p.id}`)).body.data.status).toBe('active');
    expect(await eventsOf(p.id)).toEqual(['payee.setup.pending', 'payee.setup.completed']);
  });

  it('rejected or expired: failed once, with payee.setup.failed', async () => {
    const rejected = await newPayee();
    await decide(rejected.id, 'rejected', 'unknown supplier');
    expect((await api.get(`/v1/external-accounts/${rejected.id}`)).body.data).toMatchObject({
      status: 'failed',
      approval_status: 'rejected',
      failure_reason: 'approval_rejected: unknown supplier',
    });
    await expect(decide(rejected.id, 'approved')).rejects.toMatchObject({ code: 'invalid_state_transition' });

    const expired = await newPayee();
    await t.db
      .updateTable('approvals')
      .set({ expires_at: new Date(Date.now() - 1) })
      .where('subject_id', '=', expired.id)
      .execute();
    await expireDueApprovals(t.db, t.config);
    await expireDueApprovals(t.db, t.config);
    expect((await api.get(`/v1/external-accounts/${expired.id}`)).body.data).toMatchObject({
      status: 'failed',
      approval_status: 'expired',
    });
    for (const p of [rejected, expired]) expect(await eventsOf(p.id)).toEqual(['payee.setup.pending', 'payee.setup.failed']);
  });
});

describe('payouts above the threshold with approvals on', () => {
  it('a payout at or below the threshold goes straight to its rail', async () => {
    const payee = await activePayee();
    const res = await pay(payee, '1000.00');
    expect(res.status).toBe(200);
    await drain();
    expect((await api.get(`/v1/transfers/${res.body.data.id}`)).body.data.transfer_status).toBe('completed');
    expect(res.body.data).not.toHaveProperty('approval_status');
    await expect(
      t.db.selectFrom('approvals').select('id').where('subject_id', '=', res.body.data.id).executeTakeFirst(),
    ).resolves.toBeUndefined();
  });

  it('above it: pending with the funds held, never dispatched or simulated before approval; approved, it completes', async () => {
    const payee = await activePayee();
    const before = await balance();
    const res = await pay(payee, '1500.00');
    expect(res.status).toBe(200);
    const id = res.body.data.id;
    expect(res.body.data).toMatchObject({ transfer_status: 'pending', approval_status: 'waiting_approval' });
    const cost = 1500 + Number(res.body.data.fee);
    expect(await balance()).toEqual({ balance: before.balance, available: (Number(before.available) - cost).toFixed(2) });
    await drain();
    expect((await api.get(`/v1/transfers/${id}`)).body.data.transfer_status).toBe('pending');
    const forced = await api.post(`/v1/simulations/transfers/${id}/complete`, {});
    expect(forced.status).toBe(409);
    const approval = await approvalOf(id);
    expect(approval).toMatchObject({ kind: 'payout', amount: 150000n, currency: 'NGN' });
    expect(approval.summary).toContain('Payout of 1500.00 NGN to Amina Bello');

    await decide(id, 'approved');
    await drain();
    expect((await api.get(`/v1/transfers/${id}`)).body.data).toMatchObject({ transfer_status: 'completed', approval_status: 'approved' });
    expect(await balance()).toEqual({
      balance: (Number(before.balance) - cost).toFixed(2),
      available: (Number(before.available) - cost).toFixed(2),
    });
    expect(await eventsOf(id)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.completed']);
  });

  it('rejected or expired: failed, the hold released exactly once', async () => {
    const payee = await activePayee();
    const before = await balance();
    const a = (await pay(payee, '2000.00')).body.data;
    const b = (await pay(payee, '3000.00')).body.data;
    const [rejected, expired] = [a.id, b.id];
    expect((await balance()).available).toBe((Number(before.available) - 5000 - Number(a.fee) - Number(b.fee)).toFixed(2));
    await decide(rejected, 'rejected', 'too much');
    await t.db
      .updateTable('approvals')
      .set({ expires_at: new Date(Date.now() - 1) })
      .where('subject_id', '=', expired)
      .execute();
    await Promise.allSettled([expireDueApprovals(t.db, t.config), decide(expired, 'approved'), expireDueApprovals(t.db, t.config)]);
    expect((await api.get(`/v1/transfers/${rejected}`)).body.data).toMatchObject({
      transfer_status: 'failed',
      failure_reason: 'approval_rejected: too much',
    });
    expect((await api.get(`/v1/transfers/${expired}`)).body.data).toMatchObject({
      transfer_status: 'failed',
      failure_reason: 'approval_expired',
    });
    expect(await balance()).toEqual(before);
    await expect(decide(rejected, 'approved')).rejects.toMatchObject({ code: 'invalid_state_transition' });
    await drain();
    expect(await balance()).toEqual(before);
    for (const id of [rejected, expired]) expect(await eventsOf(id)).toEqual(['transfer.status.pending', 'transfer.status.failed']);
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });
});
