import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { newId } from '../../src/lib/ids.js';
import { decide as decideOnly, parsePolicy, requestApproval } from '../../src/modules/approvals/service.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { decideApproval, expireDueApprovals } from '../../src/workers/approvals.js';
import { balances, eventsOf, newCustomer, openAccount, runLimitWorker } from '../fx-helpers.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/** Maker-checker on FX orders: waiting_approval with the funds held, approve, reject, expiry, races. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const checker = { userId: newId(), email: 'checker@example.com' };
const scopeOf = (tenantId: string) => ({ tenantId, environment: 'sandbox' as const });

/** A business with FX approvals on (sandbox only) and a customer with funded USD and NGN accounts. */
async function setup(approvals: Record<string, unknown> = { sandbox: { fx_orders: true } }) {
  const tenant = await t.tenant();
  await setSettings(t.db, tenant.tenant_id, { approvals });
  const api = clientFor(t, tenant.sandbox.secret_key);
  const customer = await newCustomer(api);
  const usd = await openAccount(api, 'USD', customer, '100.00');
  const ngn = await openAccount(api, 'NGN', customer, '20000.00');
  const order = (extra: Record<string, unknown> = {}) =>
    api.post('/v1/fx/orders', {
      customer_id: customer,
      order_type: 'market',
      side: 'sell',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '10.00',
      source_id: usd,
      destination_id: ngn,
      ...extra,
    });
  return { tenant, api, customer, usd, ngn, order, scope: scopeOf(tenant.tenant_id) };
}

async function approvalOf(orderId: string) {
  return t.db.selectFrom('approvals').selectAll().where('subject_id', '=', orderId).executeTakeFirstOrThrow();
}

async function holdStatus(orderId: string) {
  const o = await t.db.selectFrom('fx_orders').select('hold_id').where('id', '=', orderId).executeTakeFirstOrThrow();
  return (await t.db.selectFrom('ledger_holds').select('status').where('id', '=', o.hold_id!).executeTakeFirstOrThrow()).status;
}

const decide = (scope: ReturnType<typeof scopeOf>, id: string, decision: 'approved' | 'rejected', reason: string | null = null) =>
  decideApproval(t.db, scope, t.config, id, decision, checker, reason);

describe('FX orders with approvals on', () => {
  it('creates a market order in waiting_approval with created_by fields; the funds are held, nothing executes', async () => {
    const { api, usd, ngn, order } = await setup();
    const res = await order();
    expect(res.status).toBe(200);
    const o = res.body.data;
    expect(o).toMatchObject({
      status: 'waiting_approval',
      created_by_role: 'api_key',
      approved_by_user_id: null,
      approved_at: null,
      rejected_by_user_id: null,
      rejected_at: null,
    });
    expect(o).not.toHaveProperty('created_by_user_id');
    expect(o).not.toHaveProperty('rate');
    // sell 10.00 USD + 0 fee (default fee 0 bps?) held, nothing posted
    const usdNow = await balances(api, usd);
    expect(usdNow.balance).toBe('100.00');
    expect(Number(usdNow.available)).toBeLessThan(100);
    expect(await balances(api, ngn)).toEqual({ balance: '20000.00', available: '20000.00' });
    expect(await holdStatus(o.id)).toBe('pending');
    // Listed as pending approval, and cannot be cancelled through the API (as in the reference).
    const pending = await api.get('/v1/fx/orders/pending-approvals');
    expect(pending.body.data.items.map((i: { id: string }) => i.id)).toEqual([o.id]);
    expect((await api.get('/v1/fx/orders?status=waiting_approval')).body.data.total_items).toBe(1);
    expect((await api.post(`/v1/fx/orders/${o.id}/cancel`, {})).status).toBe(409);
    expect(await eventsOf(t, o.id)).toEqual([]);
  });

  it('approve: executes exactly as an order without approvals would, once', async () => {
    const { api, usd, ngn, order, scope, tenant } = await setup();
    const o = (await order()).body.data;
    const approval = await approvalOf(o.id);
    expect(approval).toMatchObject({ kind: 'fx_order', status: 'waiting_approval', created_by_role: 'api_key' });
    expect(approval.summary).toContain('sell 10.00 USD for NGN');

    await decide(scope, approval.id, 'approved');
    const done = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    expect(done).toMatchObject({ status: 'completed', approved_by_user_id: checker.userId, rate: '1542.25', converted_amount: '15422.50' });
    expect(done.approved_at).toBeTruthy();
    expect(await holdStatus(o.id)).toBe('voided');
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '35422.50', available: '35422.50' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.completed']);
    // A second decision changes nothing.
    await expect(decide(scope, approval.id, 'approved')).rejects.toMatchObject({ code: 'invalid_state_transition' });
    await expect(decide(scope, approval.id, 'rejected')).rejects.toMatchObject({ code: 'invalid_state_transition' });
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
    expect((await reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('reject: rejected with who and when, the hold released once, nothing moved', async () => {
    const { api, usd, order, scope } = await setup();
    const o = (await order()).body.data;
    const approval = await approvalOf(o.id);
    await decide(scope, approval.id, 'rejected', 'not today');
    const done = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    expect(done).toMatchObject({
      status: 'rejected',
      rejected_by_user_id: checker.userId,
      rejection_reason: 'not today',
      approved_at: null,
    });
    expect(done.rejected_at).toBeTruthy();
    expect(await holdStatus(o.id)).toBe('voided');
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    await expect(decide(scope, approval.id, 'approved')).rejects.toMatchObject({ code: 'invalid_state_transition' });
    expect((await approvalOf(o.id)).status).toBe('rejected');
    expect(await eventsOf(t, o.id)).toEqual([]);
  });

  it('expiry: an approval not decided in time expires the order and releases the hold once; a late decision is refused', async () => {
    const { api, usd, order, scope } = await setup();
    const o = (await order()).body.data;
    const approval = await approvalOf(o.id);
    expect(approval.expires_at.getTime() - Date.now()).toBeGreaterThan(23 * 3600_000);
    await t.db
      .updateTable('approvals')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', approval.id)
      .execute();
    // Past its expiry, a decision is refused even before the job has run.
    await expect(decide(scope, approval.id, 'approved')).rejects.toMatchObject({ code: 'invalid_state_transition' });
    await expireDueApprovals(t.db, t.config);
    await expireDueApprovals(t.db, t.config);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data).toMatchObject({ status: 'expired', rejection_reason: 'approval_expired' });
    expect((await approvalOf(o.id)).status).toBe('expired');
    expect(await holdStatus(o.id)).toBe('voided');
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.expired']);
  });

  it('limit order: waits for approval, then for its target like any limit order', async () => {
    const { api, usd, order, scope } = await setup();
    const o = (await order({ order_type: 'limit', target_rate: '1600' })).body.data;
    expect(o).toMatchObject({ status: 'waiting_approval', target_rate: '1600.00' });
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '90.00' });
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1610' });
    await runLimitWorker(t); // the worker leaves waiting_approval orders alone
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.status).toBe('waiting_approval');
    await decide(scope, (await approvalOf(o.id)).id, 'approved');
    const approved = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    expect(approved).toMatchObject({ status: 'pending', approved_by_user_id: checker.userId });
    expect(new Date(approved.expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600_000);
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.status).toBe('completed');
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
  });

  it('a quoted order waits at most as long as its quote; approved in time it executes at the quoted rate', async () => {
    const { api, order, scope } = await setup();
    const quote = (await api.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'NGN', amount: '10.00', direction: 'SELL' })).body
      .data;
    const o = (await order({ quote_id: quote.quote_id, order_type: undefined, pair: undefined, amount: undefined, side: undefined })).body
      .data;
    expect(o.status).toBe('waiting_approval');
    const approval = await approvalOf(o.id);
    expect(approval.expires_at.getTime()).toBeLessThanOrEqual(new Date(quote.expires_at).getTime());
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1400' });
    await decide(scope, approval.id, 'approved');
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data).toMatchObject({ status: 'completed', rate: quote.rate });
  });

  it('refuses an order the source cannot cover (nothing waits); approvals off in live leave live orders alone', async () => {
    const { tenant, order, customer } = await setup();
    expect((await order({ amount: '1000.00' })).status).toBe(422);
    expect(await t.db.selectFrom('approvals').select('id').where('tenant_id', '=', tenant.tenant_id).execute()).toEqual([]);
    const live = clientFor(t, tenant.live.secret_key);
    const liveCustomer = await newCustomer(live);
    const lusd = await openAccount(live, 'USD', liveCustomer);
    const lngn = await openAccount(live, 'NGN', liveCustomer);
    const res = await live.post('/v1/fx/orders', {
      order_type: 'limit',
      side: 'sell',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '10.00',
      target_rate: '1600',
      source_id: lusd,
      destination_id: lngn,
    });
    expect(res.status).toBe(422); // unfunded, and no approval step in live
    expect(customer).toBeTruthy();
  });

  it('approve, reject and expiry racing for one order resolve once', async () => {
    const { api, usd, order, scope } = await setup();
    for (let i = 0; i < 3; i++) {
      const o = (await order({ amount: '5.00' })).body.data;
      const approval = await approvalOf(o.id);
      await t.db
        .updateTable('approvals')
        .set({ expires_at: new Date(Date.now() + 150) })
        .where('id', '=', approval.id)
        .execute();
      await new Promise((r) => setTimeout(r, i * 100));
      const results = await Promise.allSettled([
        decide(scope, approval.id, 'approved'),
        decide(scope, approval.id, 'rejected'),
        expireDueApprovals(t.db, t.config),
        decide(scope, approval.id, 'approved'),
      ]);
      const decided = results
        .slice(0, 2)
        .concat(results.slice(3))
        .filter((r) => r.status === 'fulfilled').length;
      let final = (await api.get(`/v1/fx/orders/${o.id}`)).body.data.status;
      if (final === 'waiting_approval') {
        await new Promise((r) => setTimeout(r, 200));
        await expireDueApprovals(t.db, t.config);
        final = (await api.get(`/v1/fx/orders/${o.id}`)).body.data.status;
      }
      // Exactly one outcome: one decision succeeded (completed / rejected), or none did and it expired.
      expect(decided).toBe(final === 'expired' ? 0 : 1);
      expect(['completed', 'rejected', 'expired']).toContain(final);
      expect((await approvalOf(o.id)).status).toBe({ completed: 'approved', rejected: 'rejected', expired: 'expired' }[final as string]);
      expect(await holdStatus(o.id)).toBe('voided');
    }
    const b = await balances(api, usd);
    expect(b.balance).toBe(b.available);
  });

  it('never lets the maker decide their own request', async () => {
    const tenant = await t.tenant();
    const scope = scopeOf(tenant.tenant_id);
    const maker = { userId: newId(), role: 'admin' };
    const row = await requestApproval(t.db, scope, parsePolicy({}, 'sandbox'), { kind: 'payee', subjectId: newId(), summary: 'x', maker });
    expect(row).toMatchObject({ created_by_user_id: maker.userId, created_by_role: 'admin', status: 'waiting_approval' });
    await expect(decideOnly(t.db, scope, row.id, 'approved', { userId: maker.userId, email: 'maker@example.com' })).rejects.toMatchObject({
      code: 'forbidden',
    });
    // Another business cannot see it at all.
    await expect(decideOnly(t.db, scopeOf(newId()), row.id, 'approved', checker)).rejects.toMatchObject({ code: 'not_found' });
    expect((await t.db.selectFrom('approvals').select('status').where('id', '=', row.id).executeTakeFirstOrThrow()).status).toBe(
      'waiting_approval',
    );
  });
});
