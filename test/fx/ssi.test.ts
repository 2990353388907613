import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { newId } from '../../src/lib/ids.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { nubanCheckDigit } from '../../src/lib/payee-validation.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { decideApproval } from '../../src/workers/approvals.js';
import { balances, eventsOf, newCustomer, openAccount, runLimitWorker } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

/**
 * FX orders with destination_type "ssi" (standing settlement instruction: an active external
 * account of the order's customer, in the currency the order receives): the order converts into
 * the customer's account in that currency and pays the proceeds out to the external account
 * through the ordinary payout path, in one transaction, exactly once.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
});
afterAll(async () => t?.close());

const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };
const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
let serial = 200000;
const nuban = () => {
  const s = `${serial++}123`;
  return s + String(nubanCheckDigit('058', s));
};
/** A valid NUBAN ending in 0000: the sandbox fails its verification. */
const failingNuban = () => {
  for (;;) {
    const s = `${serial++}000`;
    if (nubanCheckDigit('058', s) === 0) return `${s}0`;
  }
};

/** A business (sandbox USD/NGN mid 1500), a KYC'd customer with funded USD and an NGN account, and an active NGN payee. */
async function setup(settings?: Record<string, unknown>) {
  const tenant = await t.tenant();
  if (settings) await setSettings(t.db, tenant.tenant_id, settings);
  const api = clientFor(t, tenant.sandbox.secret_key);
  expect((await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1500' })).status).toBe(200);
  const customer = await newCustomer(api);
  await approveKyc(api, customer);
  const usd = await openAccount(api, 'USD', customer, '100.00');
  const ngn = await openAccount(api, 'NGN', customer, '1000.00');
  const payee = await newPayee(api, customer);
  const order = (extra: Record<string, unknown> = {}, idempotencyKey?: string) =>
    api.post(
      '/v1/fx/orders',
      {
        customer_id: customer,
        order_type: 'market',
        pair: { base: 'USD', quote: 'NGN' },
        amount: '10.00',
        source_type: 'account',
        source_id: usd,
        destination_type: 'ssi',
        destination_id: payee,
        ...extra,
      },
      idempotencyKey ? { idempotencyKey } : {},
    );
  return { tenant, api, customer, usd, ngn, payee, order, scope: { tenantId: tenant.tenant_id, environment: 'sandbox' as const } };
}

async function newPayee(api: Client, customer: string, body: Record<string, unknown> = {}, verify = true): Promise<string> {
  const res = await api.post('/v1/external-accounts', {
    payee_type: 'bank_account',
    account_number: nuban(),
    account_name: 'John Doe',
    currency: 'NGN',
    customer_id: customer,
    institution_id: gtb.id,
    ...body,
  });
  expect(res.status, res.text).toBe(202);
  if (verify) await verifyDuePayees(t.db, t.unitOfWork, cfg);
  return res.body.data.id as string;
}

const transfersOf = (tenantId: string) => t.db.selectFrom('transfers').selectAll().where('tenant_id', '=', tenantId).execute();
const ordersOf = (tenantId: string) => t.db.selectFrom('fx_orders').selectAll().where('tenant_id', '=', tenantId).execute();
const minor = (s: string) => BigInt(s.replace('.', ''));

describe('FX orders settling to a standing settlement instruction', () => {
  it('converts, then pays the converted amount out to the external account once, with its events', async () => {
    const { tenant, api, usd, ngn, payee, order } = await setup();
    const key = newId();
    const res = await order({}, key);
    expect(res.status, res.text).toBe(200);
    const o = res.body.data;
    expect(o).toMatchObject({
      status: 'completed',
      destination_type: 'ssi',
      destination_id: payee,
      settlement_account_id: ngn,
      converted_currency: 'NGN',
      rate: '1492.50',
    });
    expect(o.converted_amount).toBe('14925.00');
    const transferId = o.payout_transfer_id as string;
    expect(transferId).toEqual(expect.any(String));

    // The payout: from the settlement account to the external account, the fee out of the proceeds.
    const tr = (await api.get(`/v1/transfers/${transferId}`)).body.data;
    expect(tr).toMatchObject({
      transfer_status: 'pending',
      source: { source_type: 'internal_account', id: ngn },
      destination: { destination_type: 'external_account', id: payee, rail: 'bank_transfer' },
      currency: 'NGN',
    });
    expect(tr).not.toHaveProperty('approval_status');
    expect(minor(tr.amount) + minor(tr.fee)).toBe(minor(o.converted_amount));
    expect(minor(tr.fee)).toBeGreaterThan(0n);
    // The remitter is the customer on file; the payout names the order it settles.
    const [row] = await transfersOf(tenant.tenant_id);
    expect((row!.metadata as { payout: Record<string, unknown> }).payout).toMatchObject({
      fx_order_id: o.id,
      remitter: {
        source: 'customer_record',
        remitter_full_name: 'John Michael Doe',
        remitter_date_of_birth: '1990-01-15',
        remitter_country: 'NG',
      },
    });

    // USD paid; the proceeds credited and held for the payout: NGN available where it started.
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '15925.00', available: '1000.00' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.completed']);
    expect(await eventsOf(t, transferId)).toEqual(['transfer.status.pending']);

    // A replay answers the same order and moves nothing again.
    const again = await order({}, key);
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(o.id);
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(1);
    expect(await ordersOf(tenant.tenant_id)).toHaveLength(1);

    // The payout's lifecycle: handed to the rail, settled.
    await dispatchPendingPayouts(t.db, cfg);
    await settleDueSandboxPayouts(t.db);
    await settleDueSandboxPayouts(t.db);
    expect((await api.get(`/v1/transfers/${transferId}`)).body.data.transfer_status).toBe('completed');
    expect(await balances(api, ngn)).toEqual({ balance: '1000.00', available: '1000.00' });
    expect(await eventsOf(t, transferId)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.completed']);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.payout_transfer_id).toBe(transferId);
    expect((await api.get(`/v1/fx/orders?account_id=${ngn}`)).body.data.items.map((i: { id: string }) => i.id)).toEqual([o.id]);
    expect((await reconcile(t.db)).ok).toBe(true);
  });

  it('gives the proceeds back to the settlement account when the rail fails the payout', async () => {
    const { api, ngn, order } = await setup();
    const o = (await order()).body.data;
    await dispatchPendingPayouts(t.db, cfg);
    const failed = await api.post(`/v1/simulations/transfers/${o.payout_transfer_id}/fail`, { reason: 'Account closed' });
    expect(failed.body.data.transfer_status).toBe('failed');
    expect(await balances(api, ngn)).toEqual({ balance: '15925.00', available: '15925.00' });
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.status).toBe('completed');
  });

  it('refuses an unknown, inactive or other customer’s external account and a currency mismatch: nothing moves', async () => {
    const { tenant, api, customer, usd, ngn, order } = await setup();
    const other = await newCustomer(api);
    const othersPayee = await newPayee(api, other);
    const failedPayee = await newPayee(api, customer, { account_number: failingNuban() });
    expect((await api.get(`/v1/external-accounts/${failedPayee}`)).body.data.status).toBe('failed');
    const usdPayee = await newPayee(api, customer, {
      payee_type: 'ach_wire',
      account_number: '4401682861',
      routing_number: '101019644',
      institution_id: undefined,
      currency: 'USD',
      account_owner_type: 'individual',
      account_type: 'checking',
      address: { address_line1: '1800 N Pole St', city: 'Orlando', state: 'US-FL', postal_code: '32801', country: 'US' },
    });
    const otherTenantPayee = (await setup()).payee;
    // Last: the other payees' verification runs would verify it.
    const pending = await newPayee(api, customer, {}, false);

    const cases: [string | undefined, number, string][] = [
      [newId(), 404, 'not_found'],
      [otherTenantPayee, 404, 'not_found'],
      [othersPayee, 400, 'validation_failed'],
      [pending, 409, 'account_inactive'],
      [failedPayee, 409, 'account_inactive'],
      [usdPayee, 422, 'currency_mismatch'],
      [undefined, 400, 'validation_failed'],
    ];
    for (const [destination, status, code] of cases) {
      const res = await order({ destination_id: destination });
      expect(res.status, `${destination}: ${res.text}`).toBe(status);
      expect(res.body.data).toBeNull();
      expect(res.body.error.code).toBe(code);
    }
    // a wallet is not a destination of this fiat-only service
    expect((await order({ destination_type: 'wallet' })).status).toBe(400);
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '1000.00', available: '1000.00' });
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(0);
    expect(await ordersOf(tenant.tenant_id)).toHaveLength(0);
  });

  it('refuses an order whose payout is refused (nothing moves, no account opened), else opens its settlement account', async () => {
    const tenant = await t.tenant();
    // The payout's own rules still apply (here the customer's KYC limit): the whole order is refused.
    await setSettings(t.db, tenant.tenant_id, { kyc_limits: { basic: { NGN: { per_transaction: '100', daily: '1000' } } } });
    const api = clientFor(t, tenant.sandbox.secret_key);
    const customer = await newCustomer(api);
    await approveKyc(api, customer);
    const usd = await openAccount(api, 'USD', customer, '100.00');
    const payee = await newPayee(api, customer);
    const body = { customer_id: customer, order_type: 'market', pair: { base: 'USD', quote: 'NGN' }, amount: '10.00', source_id: usd };
    const ngnAccounts = async () => (await api.get(`/v1/accounts?customer_id=${customer}&currency=NGN`)).body.data.items;

    const limited = await api.post('/v1/fx/orders', { ...body, destination_type: 'ssi', destination_id: payee });
    expect(limited.status, limited.text).toBe(422);
    expect(limited.body.error.code).toBe('limit_exceeded');
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(0);
    expect(await ordersOf(tenant.tenant_id)).toHaveLength(0);
    expect(await ngnAccounts()).toHaveLength(0);

    // Without an NGN account the order opens the customer's settlement account in NGN and shows it
    // (in another business: its settings are cached for a while).
    const other = clientFor(t, (await t.tenant()).sandbox.secret_key);
    const buyer = await newCustomer(other);
    await approveKyc(other, buyer);
    const source = await openAccount(other, 'USD', buyer, '100.00');
    const instruction = await newPayee(other, buyer);
    const ssi = { ...body, customer_id: buyer, source_id: source, destination_type: 'ssi', destination_id: instruction };
    const settlementAccounts = async () => (await other.get(`/v1/accounts?customer_id=${buyer}&currency=NGN`)).body.data.items;
    const placed = await other.post('/v1/fx/orders', ssi);
    expect(placed.status, placed.text).toBe(200);
    const opened = await settlementAccounts();
    expect(opened).toHaveLength(1);
    expect(placed.body.data).toMatchObject({ status: 'completed', settlement_account_id: opened[0].id });
    const again = await other.post('/v1/fx/orders', ssi);
    expect(again.body.data.settlement_account_id).toBe(opened[0].id);
    expect(await settlementAccounts()).toHaveLength(1);
  });

  it('executes a limit order to its instruction when the rate is reached, and rejects one whose instruction went away', async () => {
    const { api, ngn, payee, customer, order, tenant } = await setup();
    const placed = (await order({ order_type: 'limit', target_rate: '1550' })).body.data;
    expect(placed).toMatchObject({ status: 'pending', destination_type: 'ssi', destination_id: payee, settlement_account_id: ngn });
    expect(placed).not.toHaveProperty('payout_transfer_id');
    const second = await newPayee(api, customer);
    const doomed = (await order({ order_type: 'limit', target_rate: '1550', destination_id: second })).body.data;
    expect((await api.delete(`/v1/external-accounts/${second}`)).status).toBeLessThan(300);
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${placed.id}`)).body.data.status).toBe('pending');
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(0);

    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1600' });
    await runLimitWorker(t);
    const done = (await api.get(`/v1/fx/orders/${placed.id}`)).body.data;
    expect(done.status).toBe('completed');
    const tr = (await api.get(`/v1/transfers/${done.payout_transfer_id}`)).body.data;
    expect(tr).toMatchObject({ transfer_status: 'pending', destination: { id: payee } });
    expect(minor(tr.amount) + minor(tr.fee)).toBe(minor(done.converted_amount));
    expect((await api.get(`/v1/fx/orders/${doomed.id}`)).body.data).toMatchObject({ status: 'rejected', rejection_reason: 'not_found' });
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(1);
    expect(await balances(api, ngn)).toMatchObject({ available: '1000.00' });
    expect((await reconcile(t.db)).ok).toBe(true);
  });
});

describe('a limit order whose settlement payout is refused when it comes due', () => {
  it('is rejected (settlement_refused), its hold released; nothing converted or paid out', async () => {
    const { tenant, api, usd, ngn, order } = await setup();
    const placed = (await order({ order_type: 'limit', target_rate: '1550' })).body.data;
    expect((await balances(api, usd)).available).toBe('90.00');
    await setSettings(t.db, tenant.tenant_id, { kyc_limits: { basic: { NGN: { per_transaction: '100', daily: '1000' } } } });
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1600' });
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${placed.id}`)).body.data).toMatchObject({
      status: 'rejected',
      rejection_reason: 'settlement_refused: limit_exceeded',
    });
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '1000.00', available: '1000.00' });
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(0);
    expect((await reconcile(t.db)).ok).toBe(true);
  });
});

describe('FX orders to an ssi with approvals on', () => {
  const checker = { userId: newId(), email: 'checker@example.com' };

  it('waits: nothing is converted or paid out before approval; approval converts and pays out once', async () => {
    const { tenant, api, usd, ngn, payee, order, scope } = await setup({
      approvals: { sandbox: { fx_orders: true, payouts_above: { NGN: '0' } } },
    });
    const o = (await order()).body.data;
    expect(o).toMatchObject({ status: 'waiting_approval', destination_type: 'ssi', destination_id: payee, settlement_account_id: ngn });
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(0);
    expect((await balances(api, usd)).balance).toBe('100.00');
    expect(await balances(api, ngn)).toEqual({ balance: '1000.00', available: '1000.00' });

    const approval = await t.db.selectFrom('approvals').selectAll().where('subject_id', '=', o.id).executeTakeFirstOrThrow();
    await decideApproval(t.db, scope, t.config, approval.id, 'approved', checker, null);
    const done = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    expect(done).toMatchObject({ status: 'completed', approved_by_user_id: checker.userId });
    // The order's approval covers its payout: no second approval, whatever the payout threshold.
    const tr = (await api.get(`/v1/transfers/${done.payout_transfer_id}`)).body.data;
    expect(tr.transfer_status).toBe('pending');
    expect(tr).not.toHaveProperty('approval_status');
    expect(await transfersOf(tenant.tenant_id)).toHaveLength(1);
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '15925.00', available: '1000.00' });
    expect(await t.db.selectFrom('approvals').select('kind').where('tenant_id', '=', tenant.tenant_id).execute()).toEqual([
      { kind: 'fx_order' },
    ]);
  });

  it('an order approved without fx approvals still meets the payout threshold: the payout waits', async () => {
    const { api, order } = await setup({ approvals: { sandbox: { payouts_above: { NGN: '100' } } } });
    const o = (await order()).body.data;
    expect(o.status).toBe('completed');
    const tr = (await api.get(`/v1/transfers/${o.payout_transfer_id}`)).body.data;
    expect(tr).toMatchObject({ transfer_status: 'pending', approval_status: 'waiting_approval' });
  });
});
