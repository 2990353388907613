import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../src/ledger/index.js';
import { clientFor, startTestApp, type Client, type TestApp } from './harness.js';

/**
 * Many transfers race for one balance. On PostgreSQL they really run in parallel (pool of 10);
 * on PGlite they queue. Either way: exact final balance, no overdraft, one effect per key.
 */
let t: TestApp;
let api: Client;
let tenantId: string;
beforeAll(async () => {
  t = await startTestApp();
  const tenant = await t.tenant('Race');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
});
afterAll(async () => t?.close());

const body = (from: string, to: string, amount: string) => ({
  source: { source_type: 'internal_account', id: from },
  destination: { destination_type: 'internal_account', id: to },
  amount,
});

describe('concurrent transfers', () => {
  it('never overdraws a contested balance', async () => {
    const hot = (await api.post('/v1/accounts', { currency: 'NGN', label: 'hot' })).body.data.id;
    await api.post(`/v1/simulations/accounts/${hot}/fund`, { amount: '100.00' });
    const sinks: string[] = [];
    for (let i = 0; i < 5; i++) sinks.push((await api.post('/v1/accounts', { currency: 'NGN', label: `s${i}` })).body.data.id);
    // Transfers in both directions between the sinks too, to exercise lock ordering.
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        i % 6 === 5
          ? api.post('/v1/transfers', body(sinks[i % 5]!, sinks[(i + 1) % 5]!, '0.01'))
          : api.post('/v1/transfers', body(hot, sinks[i % 5]!, '3.00')),
      ),
    );
    const fromHot = results.filter((_, i) => i % 6 !== 5);
    const ok = fromHot.filter((r) => r.status === 200).length;
    expect(ok).toBe(33);
    expect(fromHot.filter((r) => r.status === 422 && r.body.error.code === 'insufficient_funds')).toHaveLength(50 - 33);
    expect((await api.get(`/v1/accounts/${hot}`)).body.data.balance).toBe('1.00');
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('gives one effect for parallel requests with the same key', async () => {
    const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'a' })).body.data.id;
    const b = (await api.post('/v1/accounts', { currency: 'NGN', label: 'b' })).body.data.id;
    await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '10.00' });
    const results = await Promise.all(
      Array.from({ length: 10 }, () => api.post('/v1/transfer', body(a, b, '1.00'), { idempotencyKey: `same-${a}` })),
    );
    for (const r of results) expect([200, 409]).toContain(r.status);
    expect((await api.get(`/v1/accounts/${b}`)).body.data.balance).toBe('1.00');
    expect((await api.get(`/v1/transfers?account_id=${a}`)).body.data.total_items).toBe(1);
  });
});
