import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportTransactions } from '../../src/modules/transactions/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

let t: TestApp;
let api: Client;
let tenantId: string;
let live: Client;
let other: Client;
let customerId: string;
let a: string;
let b: string;
let usd: string;

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await t.tenant('Acme Ltd');
  api = clientFor(t, tenant.sandbox.secret_key);
  tenantId = tenant.tenant_id;
  live = clientFor(t, tenant.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customerId);
  a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'a', customer_id: customerId })).body.data.id;
  b = (await api.post('/v1/accounts', { currency: 'NGN', label: 'b' })).body.data.id;
  usd = (await api.post('/v1/accounts', { currency: 'USD', label: 'u' })).body.data.id;
  await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '500.00' });
  await api.post(`/v1/simulations/accounts/${usd}/fund`, { amount: '7.25' });
  for (const amount of ['10.00', '20.00', '=cmd']) {
    await api.post('/v1/transfer', {
      source: { source_type: 'internal_account', id: a },
      destination: { destination_type: 'internal_account', id: b },
      amount: amount === '=cmd' ? '5.00' : amount,
      description: amount === '=cmd' ? '=HYPERLINK("x")' : 'pay, "quoted"',
    });
  }
});
afterAll(async () => t?.close());

describe('transactions', () => {
  it('lists per account with every filter', async () => {
    const all = (await api.get(`/v1/transactions?account_id=${a}`)).body.data;
    expect(all.total_items).toBe(4);
    expect(all.items[0]).toMatchObject({ direction: 'out', amount: '5.00', balance_before: '470.00', balance_after: '465.00' });
    expect((await api.get(`/v1/transactions?account_id=${a}&direction=in`)).body.data.total_items).toBe(1);
    expect((await api.get(`/v1/transactions?customer_id=${customerId}`)).body.data.total_items).toBe(4);
    expect((await api.get('/v1/transactions?transaction_type=account_funding')).body.data.total_items).toBe(2);
    expect((await api.get('/v1/transactions?channel=internal&status=completed')).body.data.total_items).toBe(6);
    expect((await api.get('/v1/transactions?tx_hash=0xabc')).body.data.total_items).toBe(0);
    expect((await api.get('/v1/transactions?start_date=2000-01-01T00:00:00Z&end_date=2100-01-01')).body.data.total_items).toBe(8);
    for (const bad of [
      'channel=pigeon',
      'direction=up',
      'status=ok',
      'transaction_type=x',
      'account_id=1',
      'start_date=01/01/2024',
      'items_per_page=500',
      'page=0',
    ]) {
      const res = await api.get(`/v1/transactions?${bad}`);
      expect(res.status, bad).toBe(400);
    }
  });

  it('gets one, 404 for other business and environment', async () => {
    const first = (await api.get(`/v1/transactions?account_id=${b}`)).body.data.items[0];
    expect((await api.get(`/v1/transactions/${first.id}`)).body.data).toEqual(first);
    expect((await other.get(`/v1/transactions/${first.id}`)).status).toBe(404);
    expect((await live.get(`/v1/transactions/${first.id}`)).status).toBe(404);
    expect((await live.get('/v1/transactions')).body.data.total_items).toBe(0);
    expect((await api.get('/v1/transactions/nope')).status).toBe(400);
  });

  it('sums volume per currency, each movement once', async () => {
    const v = (await api.get('/v1/transactions/volume')).body.data;
    expect(v).not.toHaveProperty('total_volume');
    expect(v.by_currency).toEqual([
      { currency: 'NGN', total_volume: '535.00', transaction_count: 4 },
      { currency: 'USD', total_volume: '7.25', transaction_count: 1 },
    ]);
    const transfers = (await api.get('/v1/transactions/volume?transaction_type=internal_transfer')).body.data;
    expect(transfers).toMatchObject({ total_volume: '35.00', currency: 'NGN' });
    expect((await api.get(`/v1/transactions/volume?sending_account_id=${a}`)).body.data.total_volume).toBe('35.00');
    expect((await api.get(`/v1/transactions/volume?receiving_account_id=${usd}`)).body.data.total_volume).toBe('7.25');
    expect((await other.get('/v1/transactions/volume')).body.data).toMatchObject({ total_volume: '0', by_currency: [] });
    expect((await api.get('/v1/transactions/volume?direction=sideways')).status).toBe(400);
  });

  it('exports CSV and JSON as attachments', async () => {
    const csv = await api.get(`/v1/transactions/export?account_id=${a}`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toContain('text/csv');
    expect(csv.headers['content-disposition']).toMatch(/^attachment; filename="transactions_export_\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toMatch(/^id,date_created,account_id/);
    expect(lines).toHaveLength(5);
    expect(csv.text).toContain(`"'=HYPERLINK(""x"")"`);
    expect(csv.text).toContain('"pay, ""quoted"""');
    const json = await api.get('/v1/transactions/export?export_format=json&currency=USD');
    expect(json.headers['content-disposition']).toContain('.json');
    expect(json.body).toHaveLength(1);
    expect(json.body[0]).toMatchObject({ currency: 'USD', amount: '7.25' });
    expect((await api.get('/v1/transactions/export?export_format=xml')).status).toBe(400);
    const none = await other.get('/v1/transactions/export?export_format=json');
    expect(none.body).toEqual([]);
  });

  it('pages through the export with keyset reads', async () => {
    const ids: string[] = [];
    for await (const row of exportTransactions(t.db, { tenantId, environment: 'sandbox' }, { export_format: 'json' }, 3)) ids.push(row.id);
    expect(ids).toHaveLength(8);
    expect(new Set(ids).size).toBe(8);
    expect([...ids].sort().reverse()).toEqual(ids);
  });
});
