import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

let t: TestApp;
let api: Client;
let live: Client;
let other: Client;
let tenantId: string;
let customerId: string;

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await t.tenant('Acme Ltd');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
  live = clientFor(t, tenant.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customerId);
});
afterAll(async () => t?.close());

async function account(currency = 'NGN', fund?: string, client = api, customer?: string) {
  const a = (await client.post('/v1/accounts', { currency, label: 'acc', ...(customer ? { customer_id: customer } : {}) })).body.data;
  if (fund) expect((await client.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund })).status).toBe(200);
  return a.id as string;
}

const transfer = (source: string, destination: string, amount: unknown, extra: Record<string, unknown> = {}) => ({
  source: { source_type: 'internal_account', id: source },
  destination: { destination_type: 'internal_account', id: destination },
  amount,
  description: 'rent',
  ...extra,
});

const balance = async (id: string, client = api) => (await client.get(`/v1/accounts/${id}`)).body.data;

describe('funding simulation', () => {
  it('credits from settlement, sandbox only', async () => {
    const a = await account();
    const res = await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '100.50', reference: 'dep-1' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      amount: '100.50',
      balance_before: '0.00',
      balance_after: '100.50',
      direction: 'in',
      transaction_type: 'account_funding',
      channel: 'bank_transfer',
      client_reference: 'dep-1',
    });
    expect((await balance(a)).balance).toBe('100.50');
    const liveAcc = (await live.post('/v1/accounts', { currency: 'NGN', label: 'l' })).body.data.id;
    expect((await live.post(`/v1/simulations/accounts/${liveAcc}/fund`, { amount: 1 })).status).toBe(404);
    expect((await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '1.001' })).body.error.code).toBe('invalid_amount');
    expect((await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: 0 })).status).toBe(400);
    expect((await other.post(`/v1/simulations/accounts/${a}/fund`, { amount: 1 })).status).toBe(404);
  });
});

describe('internal transfers', () => {
  it('moves money exactly, shows both transactions, replays idempotently', async () => {
    const a = await account('NGN', '1000.00', api, customerId);
    const b = await account();
    const key = `k-${a}`;
    const res = await api.post('/v1/transfer', transfer(a, b, '250.25', { client_reference: 'inv-9', customer_id: customerId }), {
      idempotencyKey: key,
    });
    expect(res.status).toBe(200);
    const tr = res.body.data;
    expect(tr).toMatchObject({
      transfer_status: 'completed',
      amount: '250.25',
      fee: '0.00',
      currency: 'NGN',
      client_reference: 'inv-9',
      source: { id: a },
      destination: { id: b },
    });
    expect((await balance(a)).balance).toBe('749.75');
    expect((await balance(b)).available_balance).toBe('250.25');
    // Same key on the alias path: same operation, replayed, nothing moves again.
    const replay = await api.post('/v1/transfers', transfer(a, b, '250.25', { client_reference: 'inv-9', customer_id: customerId }), {
      idempotencyKey: key,
    });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(tr.id);
    expect((await balance(a)).balance).toBe('749.75');
    const reused = await api.post('/v1/transfers', transfer(a, b, '1.00'), { idempotencyKey: key });
    expect(reused.status).toBe(422);
    expect(reused.body.error.code).toBe('idempotency_key_reused');

    expect((await api.get(`/v1/transfers/${tr.id}`)).body.data).toMatchObject({ id: tr.id, transaction_id: tr.transaction_id });
    const txs = (await api.get(`/v1/transactions?reference=${tr.id}`)).body.data.items;
    expect(txs).toHaveLength(2);
    const out = txs.find((x: { direction: string }) => x.direction === 'out');
    const inn = txs.find((x: { direction: string }) => x.direction === 'in');
    expect(out).toMatchObject({
      id: tr.transaction_id,
      account_id: a,
      balance_before: '1000.00',
      balance_after: '749.75',
      transaction_type: 'internal_transfer',
      channel: 'internal',
      customer_id: customerId,
    });
    expect(inn).toMatchObject({ account_id: b, balance_before: '0.00', balance_after: '250.25' });
    const events = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', tr.id).execute();
    expect(events.map((e) => e.event_type)).toEqual(['transfer.status.completed']);
  });

  it('refuses with 422 insufficient_funds and moves nothing', async () => {
    const a = await account('NGN', '10.00');
    const b = await account();
    const res = await api.post('/v1/transfer', transfer(a, b, '10.01'));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('insufficient_funds');
    expect((await balance(a)).balance).toBe('10.00');
    expect((await balance(b)).balance).toBe('0.00');
    expect((await api.get(`/v1/transfers?account_id=${a}`)).body.data.items).toHaveLength(0);
  });

  it('answers 409 account_frozen, 422 currency_mismatch, 404, 400', async () => {
    const a = await account('NGN', '50.00');
    const b = await account();
    const usd = await account('USD');
    const mismatch = await api.post('/v1/transfer', transfer(a, usd, '1.00'));
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error.code).toBe('currency_mismatch');
    expect((await api.post('/v1/transfer', transfer(a, b, '1.00', { currency: 'USD' }))).body.error.code).toBe('currency_mismatch');
    await api.patch(`/v1/accounts/${a}/status`, { status: 'frozen' });
    const frozen = await api.post('/v1/transfer', transfer(a, b, '1.00'));
    expect(frozen.status).toBe(409);
    expect(frozen.body.error.code).toBe('account_frozen');
    // A frozen account still receives.
    expect((await api.post('/v1/transfer', transfer(await account('NGN', '5.00'), a, '1.00'))).status).toBe(200);
    await api.patch(`/v1/accounts/${a}/status`, { status: 'active' });
    const missing = '0190e7a0-0000-7000-8000-000000000000';
    expect((await api.post('/v1/transfer', transfer(a, missing, '1.00'))).status).toBe(404);
    expect((await api.post('/v1/transfer', transfer(missing, b, '1.00'))).status).toBe(404);
    expect((await api.post('/v1/transfer', transfer(a, a, '1.00'))).status).toBe(400);
    expect((await api.post('/v1/transfer', transfer(a, b, '1.001'))).body.error.code).toBe('invalid_amount');
    expect((await api.post('/v1/transfer', transfer(a, b, -1))).body.error.code).toBe('invalid_amount');
    expect((await api.post('/v1/transfer', { ...transfer(a, b, 1), extra: true })).status).toBe(400);
    const card = await api.post('/v1/transfer', { ...transfer(a, b, 1), destination: { destination_type: 'card', id: b } });
    // Card destinations fund a card (src/modules/transfers/card.ts): an account id is no card.
    expect(card.status).toBe(404);
    expect(card.body.error.details[0].field).toBe('destination.id');
    expect(
      (await api.post('/v1/transfer', { ...transfer(a, b, 1), destination: { destination_type: 'external_account', id: b } })).status,
    ).toBe(404);
    expect((await api.post('/v1/transfer', transfer(a, b, 1, { customer_id: customerId }))).status).toBe(400);
    expect((await api.post('/v1/transfer', transfer(a, b, 1), { idempotencyKey: null })).body.error.code).toBe('missing_idempotency_key');
  });

  it('isolates other businesses and environments', async () => {
    const a = await account('NGN', '50.00');
    const b = await account();
    const tr = (await api.post('/v1/transfer', transfer(a, b, '1.00'))).body.data;
    expect((await other.get(`/v1/transfers/${tr.id}`)).status).toBe(404);
    expect((await live.get(`/v1/transfers/${tr.id}`)).status).toBe(404);
    expect((await other.post('/v1/transfer', transfer(a, b, '1.00'))).status).toBe(404);
    const theirs = await account('NGN', '5.00', other);
    expect((await api.post('/v1/transfer', transfer(a, theirs, '1.00'))).status).toBe(404);
    expect((await other.post('/v1/transfer', transfer(theirs, b, '1.00'))).status).toBe(404);
    expect((await other.get(`/v1/transactions/${tr.transaction_id}`)).status).toBe(404);
  });

  it('charges configured fees into the business account, created on demand', async () => {
    const feeTenant = await t.tenant('Fees Ltd');
    const fees = clientFor(t, feeTenant.sandbox.secret_key);
    await setSettings(t.db, feeTenant.tenant_id, { fees: { internal_transfer: { NGN: { flat: '10.00', bps: 100 } } } });
    const cust = (await fees.post('/v1/customers', johnDoe())).body.data.id;
    await approveKyc(fees, cust);
    const a = await account('NGN', '1000.00', fees, cust);
    const b = await account('NGN', undefined, fees, cust);
    const res = await fees.post('/v1/transfer', transfer(a, b, '100.00'));
    expect(res.status).toBe(200);
    expect(res.body.data.fee).toBe('11.00');
    expect((await balance(a, fees)).balance).toBe('889.00');
    const own = (await fees.get('/v1/accounts')).body.data.items.filter((x: { customer_id: string | null }) => !x.customer_id);
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ balance: '11.00', label: 'Fees' });
    // Amount + fee must be available.
    const short = await fees.post('/v1/transfer', transfer(a, b, '880.00'));
    expect(short.body.error.code).toBe('insufficient_funds');
    expect((await fees.post('/v1/transfer', transfer(a, b, '870.30'))).status).toBe(200);
    expect((await balance(a, fees)).balance).toBe('0.00');
  });

  it('creates no Fees account for a refused transfer: the first accepted fee creates it', async () => {
    const feeTenant = await t.tenant('Refused Fees Ltd');
    const fees = clientFor(t, feeTenant.sandbox.secret_key);
    await setSettings(t.db, feeTenant.tenant_id, { fees: { internal_transfer: { NGN: { flat: '10.00' } } } });
    const cust = (await fees.post('/v1/customers', johnDoe())).body.data.id;
    await approveKyc(fees, cust);
    const a = await account('NGN', '50.00', fees, cust);
    const b = await account('NGN', undefined, fees, cust);
    const ownAccounts = async () =>
      (await fees.get('/v1/accounts')).body.data.items.filter((x: { customer_id: string | null }) => !x.customer_id);
    const accountEvents = async () =>
      (
        await t.db
          .selectFrom('events')
          .select('event_type')
          .where('tenant_id', '=', feeTenant.tenant_id)
          .where('event_type', '=', 'account.created')
          .execute()
      ).length;
    const before = await accountEvents();
    const refused = await fees.post('/v1/transfer', transfer(a, b, '45.00')); // 45 + 10 > 50
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('insufficient_funds');
    expect(await ownAccounts()).toEqual([]);
    expect(await accountEvents()).toBe(before);
    // Refused and accepted transfers in one batch: the accepted one creates it, with its fee only.
    const [again, ok] = await Promise.all([
      fees.post('/v1/transfer', transfer(a, b, '45.00')),
      fees.post('/v1/transfer', transfer(a, b, '5.00')),
    ]);
    expect([again.status, ok.status].sort()).toEqual([200, 422]);
    const own = await ownAccounts();
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ balance: '10.00', label: 'Fees' });
    expect(await accountEvents()).toBe(before + 1);
    expect((await balance(a, fees)).balance).toBe('35.00');
    expect((await reconcile(t.db)).ok).toBe(true);
  });

  it('lists with filters and validates them', async () => {
    const a = await account('NGN', '100.00', api, customerId);
    const b = await account();
    for (let i = 0; i < 3; i++) await api.post('/v1/transfers', transfer(a, b, '1.00'));
    const byAccount = await api.get(`/v1/transfers?account_id=${b}&items_per_page=2`);
    expect(byAccount.body.data).toMatchObject({ total_items: 3, total_pages: 2, items_per_page: 2 });
    const next = await api.get(`/v1/transfers?account_id=${b}&items_per_page=2&cursor=${byAccount.body.data.next_cursor}`);
    expect(next.body.data.items).toHaveLength(1);
    expect((await api.get(`/v1/transfers?customer_id=${customerId}&status=completed`)).body.data.items.length).toBeGreaterThanOrEqual(3);
    expect((await api.get('/v1/transfers?status=done')).status).toBe(400);
    expect((await api.get('/v1/transfers?from=yesterday')).status).toBe(400);
    const today = new Date().toISOString().slice(0, 10);
    expect((await api.get(`/v1/transfers?account_id=${b}&from=${today}&to=${today}`)).body.data.total_items).toBe(3);
    expect((await api.get(`/v1/transfers?account_id=${b}&to=2000-01-01`)).body.data.total_items).toBe(0);
  });

  it('refuses deleted accounts and unrounded JSON numbers', async () => {
    const a = await account('NGN', '5.00');
    const gone = await account();
    expect((await api.patch(`/v1/accounts/${gone}/status`, { status: 'deleted' })).status).toBe(200);
    const toDeleted = await api.post('/v1/transfer', transfer(a, gone, '1.00'));
    expect(toDeleted.status).toBe(409);
    expect(toDeleted.body.error.code).toBe('account_inactive');
    expect((await api.post('/v1/transfer', transfer(gone, a, '1.00'))).body.error.code).toBe('account_inactive');
    expect((await api.post(`/v1/simulations/accounts/${gone}/fund`, { amount: '1.00' })).body.error.code).toBe('account_inactive');
    const raw = `{"source":{"id":"${a}"},"destination":{"destination_type":"internal_account","id":"${gone}"},"amount":1.129999999999999999}`;
    const unrounded = await api.post('/v1/transfer', raw);
    expect(unrounded.body.error.code).toBe('invalid_amount');
    expect((await balance(a)).balance).toBe('5.00');
  });

  it('keeps the ledger reconciled, and reconcile catches tampering', async () => {
    const a = await account('NGN', '3.00');
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
    await t.db.updateTable('ledger_balances').set({ posted: 999n }).where('account_id', '=', a).execute();
    const broken = await reconcile(t.db, tenantId);
    expect(broken.ok).toBe(false);
    expect(broken.balance_mismatches).toEqual([{ account_id: a, posted: '999', entries_sum: '300' }]);
    await t.db.updateTable('ledger_balances').set({ posted: 300n }).where('account_id', '=', a).execute();
  });

  it('keeps the ledger reconciled', async () => {
    const report = await reconcile(t.db, tenantId);
    expect(report).toMatchObject({ ok: true });
  });
});
