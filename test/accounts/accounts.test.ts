import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isValidAbaRouting, isValidIBAN, isValidNuban } from '../../src/lib/bank-details.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let api: Client;
let live: Client;
let other: Client;
let customerId: string;

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await t.tenant('Acme Ltd');
  api = clientFor(t, tenant.sandbox.secret_key);
  live = clientFor(t, tenant.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
  const res = await api.post('/v1/customers', johnDoe());
  customerId = res.body.data.id;
});
afterAll(async () => t?.close());

describe('accounts', () => {
  it('creates a customer account with NUBAN bank details and lists it', async () => {
    const res = await api.post('/v1/accounts', {
      currency: 'NGN',
      type: 'regular',
      label: 'ops',
      customer_id: customerId,
      blockchain_network: 'polygon',
    });
    expect(res.status).toBe(200);
    const a = res.body.data;
    expect(a).toMatchObject({
      currency: 'NGN',
      customer_id: customerId,
      status: 'active',
      balance: '0.00',
      available_balance: '0.00',
      label: 'ops',
    });
    expect(isValidNuban(a.account_number, a.bank_details.bank_code)).toBe(true);
    expect(a.bank_details.account_name).toBe('John Michael Doe');
    const list = await api.get(`/v1/accounts?customer_id=${customerId}`);
    expect(list.status).toBe(200);
    expect(list.body.data.items.map((x: { id: string }) => x.id)).toContain(a.id);
    expect(list.body.data).toMatchObject({ page: 1, total_items: 1 });
    expect((await api.get(`/v1/accounts/${a.id}`)).body.data.id).toBe(a.id);
  });

  it('gives IBANs for EUR and GBP, ABA routing for USD, and a business account without customer_id', async () => {
    const eur = (await api.post('/v1/accounts', { currency: 'EUR', label: 'eu' })).body.data;
    expect(eur).not.toHaveProperty('customer_id');
    expect(eur.bank_details.account_name).toBe('Acme Ltd');
    expect(eur.bank_details.iban).toMatch(/^DE/);
    expect(isValidIBAN(eur.bank_details.iban)).toBe(true);
    const gbp = (await api.post('/v1/accounts', { currency: 'GBP', label: 'uk' })).body.data;
    expect(isValidIBAN(gbp.bank_details.iban)).toBe(true);
    expect(gbp.bank_details.sort_code).toMatch(/^\d{6}$/);
    const usd = (await api.post('/v1/accounts', { currency: 'USD', label: 'us' })).body.data;
    expect(isValidAbaRouting(usd.bank_details.routing_number)).toBe(true);
    const ugx = (await api.post('/v1/accounts', { currency: 'UGX', label: 'ug' })).body.data;
    expect(ugx.balance).toBe('0');
  });

  it('validates input', async () => {
    const bad = await api.post('/v1/accounts', { currency: 'JPY', label: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('currency');
    expect((await api.post('/v1/accounts', { currency: 'NGN', label: 'x', foo: 1 })).status).toBe(400);
    expect((await api.post('/v1/accounts', { currency: 'NGN' })).status).toBe(400);
    expect((await api.post('/v1/accounts', { currency: 'NGN', label: 'x', type: 'checking' })).status).toBe(400);
    const missing = await api.post('/v1/accounts', { currency: 'NGN', label: 'x', customer_id: '0190e7a0-0000-7000-8000-000000000000' });
    expect(missing.status).toBe(404);
    expect((await api.get('/v1/accounts?status=open')).status).toBe(400);
    expect((await api.get('/v1/accounts?customer_id=nope')).status).toBe(400);
    expect((await api.get('/v1/accounts/not-a-uuid')).status).toBe(400);
  });

  it('isolates businesses and environments', async () => {
    const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'iso' })).body.data;
    expect((await other.get(`/v1/accounts/${a.id}`)).status).toBe(404);
    expect((await live.get(`/v1/accounts/${a.id}`)).status).toBe(404);
    expect((await other.patch(`/v1/accounts/${a.id}/status`, { status: 'frozen' })).status).toBe(404);
    expect((await live.get('/v1/accounts')).body.data.items).toHaveLength(0);
    const otherCustomer = await other.post('/v1/accounts', { currency: 'NGN', label: 'x', customer_id: customerId });
    expect(otherCustomer.status).toBe(404);
  });

  it('freezes, reactivates and deletes at zero balance only', async () => {
    const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'st' })).body.data;
    const frozen = await api.patch(`/v1/accounts/${a.id}/status`, { status: 'frozen' });
    expect(frozen.body.data).toMatchObject({ status: 'frozen', capabilities: ['receive'] });
    expect((await api.patch(`/v1/accounts/${a.id}/status`, { status: 'active' })).body.data.status).toBe('active');
    expect((await api.patch(`/v1/accounts/${a.id}/status`, { status: 'closed' })).status).toBe(400);
    await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: '5.00' });
    const refused = await api.patch(`/v1/accounts/${a.id}/status`, { status: 'deleted' });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state_transition');
    const empty = (await api.post('/v1/accounts', { currency: 'NGN', label: 'del' })).body.data;
    expect((await api.patch(`/v1/accounts/${empty.id}/status`, { status: 'deleted' })).body.data.status).toBe('deleted');
    const again = await api.patch(`/v1/accounts/${empty.id}/status`, { status: 'active' });
    expect(again.status).toBe(409);
    const events = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', empty.id).execute();
    expect(events.map((e) => e.event_type).sort()).toEqual(['account.created', 'account.status.updated']);
  });

  it('paginates and filters the list', async () => {
    const t2 = await t.tenant('Paging');
    const c = clientFor(t, t2.sandbox.secret_key);
    for (let i = 0; i < 5; i++)
      await c.post('/v1/accounts', {
        currency: i % 2 ? 'USD' : 'NGN',
        label: i < 2 ? 'ops' : 'misc',
        type: i === 4 ? 'savings' : 'regular',
      });
    const page1 = (await c.get('/v1/accounts?items_per_page=2')).body.data;
    expect(page1).toMatchObject({ page: 1, items_per_page: 2, total_items: 5, total_pages: 3 });
    const page3 = (await c.get('/v1/accounts?items_per_page=2&page=3')).body.data;
    expect(page3.items).toHaveLength(1);
    expect((await c.get('/v1/accounts?label=ops')).body.data.total_items).toBe(2);
    expect((await c.get('/v1/accounts?currency=USD')).body.data.total_items).toBe(2);
    expect((await c.get('/v1/accounts?type=savings')).body.data.total_items).toBe(1);
    expect((await c.get('/v1/accounts?status=frozen')).body.data.total_items).toBe(0);
    const ids = page1.items.map((x: { id: string }) => x.id);
    expect([...ids].sort().reverse()).toEqual(ids);
  });
});
