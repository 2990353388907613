import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balances, newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

/**
 * Balances as of an instant and over a period (GET /v1/accounts/{id}/balances), read from the
 * balance each ledger entry carries and from the holds' lifetimes: each instant read here is taken
 * between two movements, and the answer must be what GET /v1/accounts/{id} said at that moment.
 */
let t: TestApp;
let api: Client;
let other: Client;
let usd: string;
let business: string;
/** Instants between the movements, with the account's balances as read then. */
const at: { iso: string; balance: string; available: string }[] = [];

/** Waits past the current millisecond, notes the instant and the account as it stands. */
async function mark(account: string) {
  await sleep(3);
  const iso = new Date().toISOString();
  await sleep(3);
  at.push({ iso, ...(await balances(api, account)) });
}

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  api = clientFor(t, (await t.tenant('Balances Co')).sandbox.secret_key);
  other = clientFor(t, (await t.tenant('Other Co')).sandbox.secret_key);
  const customer = await newCustomer(api);
  await approveKyc(api, customer);
  usd = await openAccount(api, 'USD', customer);
  const ngn = await openAccount(api, 'NGN', customer);
  await mark(usd); // 0: opened, nothing booked
  expect((await api.post(`/v1/simulations/accounts/${usd}/fund`, { amount: '100.00' })).status).toBe(200);
  await mark(usd); // 1: 100
  expect((await api.post(`/v1/simulations/accounts/${usd}/fund`, { amount: '50.25' })).status).toBe(200);
  await mark(usd); // 2: 150.25
  const order = await api.post('/v1/fx/orders', {
    customer_id: customer,
    order_type: 'limit',
    pair: { base: 'USD', quote: 'NGN' },
    amount: '30.00',
    target_rate: '999999',
    source_id: usd,
    destination_id: ngn,
  });
  expect(order.status, order.text).toBe(200);
  await mark(usd); // 3: 150.25 posted, 30 + fee held
  expect((await api.post(`/v1/fx/orders/${order.body.data.id}/cancel`, {})).status).toBe(200);
  await mark(usd); // 4: hold released
  const out = await api.post('/v1/transfer', {
    source: { source_type: 'internal_account', id: usd },
    destination: {
      destination_type: 'internal_account',
      id: (await api.post('/v1/accounts', { currency: 'USD', label: 'b', customer_id: customer })).body.data.id,
    },
    amount: '20.10',
    customer_id: customer,
    description: 'to savings',
  });
  expect(out.status, out.text).toBe(200);
  await mark(usd); // 5: 130.15
  business = (await api.post('/v1/accounts', { currency: 'USD', label: 'business own' })).body.data.id;
  expect((await api.post(`/v1/simulations/accounts/${business}/fund`, { amount: '7.00' })).status).toBe(200);
}, 60_000);
afterAll(() => t?.close());

describe('GET /v1/accounts/{id}/balances', () => {
  it('gives balance and available_balance as they stood at each instant', async () => {
    expect(at[3]!.available).not.toBe(at[3]!.balance);
    for (const [i, m] of at.entries()) {
      const res = await api.get(`/v1/accounts/${usd}/balances?as_of=${encodeURIComponent(m.iso)}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data, `instant ${i}`).toEqual({
        account_id: usd,
        currency: 'USD',
        as_of: m.iso,
        balance: m.balance,
        available_balance: m.available,
      });
    }
    const before = await api.get(`/v1/accounts/${usd}/balances?as_of=2020-01-01T00:00:00Z`);
    expect(before.body.data).toMatchObject({ balance: '0.00', available_balance: '0.00', as_of: '2020-01-01T00:00:00.000Z' });
    const now = await api.get(`/v1/accounts/${usd}/balances`);
    expect(now.body.data).toMatchObject({ balance: '130.15', available_balance: '130.15' });
  });

  it('accepts an offset and reads the same instant', async () => {
    const d = new Date(at[1]!.iso);
    const plusTwo = new Date(d.getTime() + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    const res = await api.get(`/v1/accounts/${usd}/balances?as_of=${encodeURIComponent(plusTwo)}`);
    expect(res.body.data).toMatchObject({ as_of: at[1]!.iso, balance: '100.00' });
  });

  it('gives a period its opening and closing balances and totals', async () => {
    const res = await api.get(`/v1/accounts/${usd}/balances?from=${encodeURIComponent(at[0]!.iso)}&to=${encodeURIComponent(at[5]!.iso)}`);
    expect(res.status, res.text).toBe(200);
    const fee = (150.25 - 130.15 - 20.1).toFixed(2);
    expect(res.body.data).toMatchObject({
      account_id: usd,
      currency: 'USD',
      from: at[0]!.iso,
      opening_balance: '0.00',
      opening_available_balance: '0.00',
      closing_balance: '130.15',
      closing_available_balance: '130.15',
      total_credits: '150.25',
      credit_count: 2,
    });
    expect(res.body.data.total_debits).toBe((20.1 + Number(fee)).toFixed(2));
    const mid = await api.get(`/v1/accounts/${usd}/balances?from=${encodeURIComponent(at[2]!.iso)}&to=${encodeURIComponent(at[3]!.iso)}`);
    expect(mid.body.data).toMatchObject({
      opening_balance: '150.25',
      opening_available_balance: '150.25',
      closing_balance: '150.25',
      closing_available_balance: at[3]!.available,
      total_credits: '0.00',
      total_debits: '0.00',
      credit_count: 0,
      debit_count: 0,
    });
  });

  it("reads the business's own accounts the same way", async () => {
    const res = await api.get(`/v1/accounts/${business}/balances?as_of=${encodeURIComponent(new Date().toISOString())}`);
    expect(res.body.data).toMatchObject({ account_id: business, balance: '7.00', available_balance: '7.00' });
    const day = new Date().toISOString().slice(0, 10);
    const period = await api.get(`/v1/accounts/${business}/balances?from=${day}&to=${day}`);
    expect(period.body.data).toMatchObject({ opening_balance: '0.00', closing_balance: '7.00', total_credits: '7.00', credit_count: 1 });
  });

  it('refuses bad input with 400 and unknown or foreign accounts with 404', async () => {
    const bad = async (query: string, field: string) => {
      const res = await api.get(`/v1/accounts/${usd}/balances?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    };
    await bad('as_of=yesterday', 'as_of');
    await bad('as_of=2024-01-31', 'as_of');
    await bad(`as_of=${encodeURIComponent(new Date(Date.now() + 86_400_000).toISOString())}`, 'as_of');
    await bad(`as_of=${encodeURIComponent(at[1]!.iso)}&from=2024-01-01`, 'as_of');
    await bad('to=2024-01-01', 'from');
    await bad('from=2024-02-01&to=2024-01-01', 'from');
    await bad('from=2099-01-01', 'from');
    await bad('since=2024-01-01', 'since');
    const missing = await api.get(`/v1/accounts/01890000-0000-7000-8000-000000000000/balances`);
    expect(missing.status).toBe(404);
    expect((await other.get(`/v1/accounts/${usd}/balances`)).status).toBe(404);
  });
});
