import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { createCustomer, verify } from '../kyc-helpers.js';

/** Features gate accounts in currencies outside the business's home currencies (NGN, USD). */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await startTestApp();
  api = clientFor(t, (await t.tenant()).sandbox.secret_key);
});
afterAll(() => t.close());

describe('account currency gating', () => {
  it('opens home-currency accounts at once and others only after <ccy>_account is active', async () => {
    const customerId = await createCustomer(api, johnDoe());
    expect((await api.post('/v1/accounts', { currency: 'NGN', label: 'main', customer_id: customerId })).status).toBe(200);

    const refused = await api.post('/v1/accounts', { currency: 'EUR', label: 'euro', customer_id: customerId });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('feature_not_active');
    expect((await api.get(`/v1/accounts?customer_id=${customerId}`)).body.data.total_items).toBe(1);

    const noKyc = await api.post('/v1/risk/features/activate', {
      feature_id: 'eur_account',
      customer_id: customerId,
      provider_data: { source_of_funds: 'salary' },
    });
    expect(noKyc.status).toBeGreaterThanOrEqual(400);

    expect((await verify(api, customerId)).status).toBe(200);
    const activated = await api.post('/v1/risk/features/activate', {
      feature_id: 'eur_account',
      customer_id: customerId,
      provider_data: { source_of_funds: 'salary' },
    });
    expect(activated.status).toBe(200);
    const eur = await api.post('/v1/accounts', { currency: 'EUR', label: 'euro', customer_id: customerId });
    expect(eur.status).toBe(200);
    expect(eur.body.data.currency).toBe('EUR');
  });

  it('does not gate the business own accounts', async () => {
    const res = await api.post('/v1/accounts', { currency: 'GBP', label: 'treasury' });
    expect(res.status).toBe(200);
  });
});
