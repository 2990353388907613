import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/workers/index.js';
import { openAccount } from '../fx-helpers.js';
import { sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
import { CLOCKS, whenReady } from './clock-helpers.js';

/** Quotes of a business on a test clock live in the clock's time: stamped by it, expired by it. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('quotes on a test clock', () => {
  it('expire when the clock passes their expiry, whatever the wall clock says', async () => {
    const { api } = await sandboxBusiness(t, 'Quote Clock Co');
    // An hour behind the wall clock: a quote of real time would be long expired at its clock time.
    const frozen = new Date(Date.now() - 3_600_000);
    const clock = (await api.post(CLOCKS, { frozen_time: frozen.toISOString() })).body.data;
    await api.post(`${CLOCKS}/${clock.id}/attach`);
    const usd = await openAccount(api, 'USD', null, '100.00');
    const ngn = await openAccount(api, 'NGN', null);
    const quote = async () =>
      (await api.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'NGN', amount: '10.00', direction: 'SELL' })).body.data;
    const order = (q: { quote_id: string }) => api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn });

    const first = await quote();
    const second = await quote();
    expect(new Date(first.expires_at).getTime()).toBe(frozen.getTime() + t.config.FX_QUOTE_TTL_SECONDS * 1000);
    const used = await order(first);
    expect(used.status, used.text).toBe(200);

    const workers = startWorkers({ config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log });
    try {
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: new Date(frozen.getTime() + 60_000).toISOString() });
      await whenReady(api, clock.id);
    } finally {
      await workers.stop();
    }
    const late = await order(second);
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('quote_expired');
  });
});
