import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { balances, newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/** FX orders without source_id/destination_id: the reference makes both optional. */
let t: TestApp;
let api: Client;
let customer: string;

beforeAll(async () => {
  t = await startTestApp();
  api = clientFor(t, (await t.tenant('FX Defaults Co')).sandbox.secret_key);
  customer = await newCustomer(api);
});
afterAll(async () => t?.close());

describe('FX order defaults', () => {
  it("settles between the customer's newest active accounts in the pair's currencies", async () => {
    await openAccount(api, 'USD', customer, '10.00');
    const usd = await openAccount(api, 'USD', customer, '500.00');
    const ngn = await openAccount(api, 'NGN', customer);
    const res = await api.post('/v1/fx/orders', {
      customer_id: customer,
      order_type: 'market',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '100',
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'completed', source_id: usd, destination_id: ngn });
    expect((await balances(api, usd)).balance).toBe('400.00');
    expect((await balances(api, ngn)).balance).toBe(res.body.data.converted_amount);
  });

  it('names the missing account, or asks for customer_id', async () => {
    const lonely = await newCustomer(api);
    await openAccount(api, 'USD', lonely, '50.00');
    const noNgn = await api.post('/v1/fx/orders', {
      customer_id: lonely,
      order_type: 'market',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '1',
    });
    expect(noNgn.status).toBe(404);
    expect(noNgn.body.error.details).toEqual([expect.objectContaining({ field: 'destination_id', code: 'not_found' })]);
    const anonymous = await api.post('/v1/fx/orders', { order_type: 'market', pair: { base: 'USD', quote: 'NGN' }, amount: '1' });
    expect(anonymous.status).toBe(400);
    expect(anonymous.body.error.details.map((d: { field: string }) => d.field)).toEqual(['source_id']);
  });
});
