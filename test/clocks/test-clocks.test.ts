import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/workers/index.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { johnDoe, sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
import { startReceiver, until } from '../webhooks/receiver.js';
import { CLOCKS, DAY, dueWork, whenReady } from './clock-helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('a test clock advanced 31 days', () => {
  it('expires a collection, an authorization and a limit order at their own times, each event once and in order', async () => {
    const rx = await startReceiver();
    const a = await sandboxBusiness(t, 'Clock Co');
    const other = await sandboxBusiness(t, 'Real Time Co');
    expect((await a.api.post('/v1/webhooks/endpoints', { url: rx.url })).status).toBe(201);
    const start = new Date();
    const clock = (await a.api.post(CLOCKS, { frozen_time: start.toISOString(), name: 'month end' })).body.data;
    expect(clock).toMatchObject({ status: 'ready', attached: false, frozen_time: start.toISOString(), name: 'month end' });
    expect((await a.api.post(`${CLOCKS}/${clock.id}/attach`)).body.data.attached).toBe(true);
    const work = await dueWork(a.api);
    const untouched = await dueWork(other.api);
    // A third business on a clock of its own that does not move.
    const still = await sandboxBusiness(t, 'Still Clock Co');
    const stillClock = (await still.api.post(CLOCKS, { frozen_time: start.toISOString() })).body.data;
    await still.api.post(`${CLOCKS}/${stillClock.id}/attach`);
    const stillWork = await dueWork(still.api);

    const workers = startWorkers(
      { config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log },
      { webhooks: { jitter: 0, timeoutMs: 5000 } },
    );
    try {
      const target = new Date(start.getTime() + 31 * DAY).toISOString();
      const advance = await a.api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: target });
      expect(advance.status, advance.text).toBe(202);
      expect(advance.body.data).toMatchObject({ status: 'advancing', advancing_to: target });
      const began = Date.now();
      expect(await whenReady(a.api, clock.id)).toMatchObject({ status: 'ready', frozen_time: target, advancing_to: null });
      console.log(`31-day advance on ${t.dbKind}: ${Date.now() - began} ms`);

      expect((await a.api.get(`/v1/collections/${work.collection.id}`)).body.data.status).toBe('expired');
      expect((await a.api.get(`/v1/card-authorizations/${work.authorization.id}`)).body.data.status).toBe('expired');
      expect((await a.api.get(`/v1/fx/orders/${work.order.id}`)).body.data.status).toBe('expired');
      // Another business (real time) and nothing of it moved.
      expect((await other.api.get(`/v1/collections/${untouched.collection.id}`)).body.data.status).toBe('pending');
      expect((await other.api.get(`/v1/card-authorizations/${untouched.authorization.id}`)).body.data.status).toBe('approved');
      expect((await other.api.get(`/v1/fx/orders/${untouched.order.id}`)).body.data.status).toBe('pending');
      expect((await still.api.get(`/v1/collections/${stillWork.collection.id}`)).body.data.status).toBe('pending');
      expect((await still.api.get(`/v1/card-authorizations/${stillWork.authorization.id}`)).body.data.status).toBe('approved');
      expect((await still.api.get(`${CLOCKS}/${stillClock.id}`)).body.data.frozen_time).toBe(start.toISOString());

      const expiries = ['collection.status.expired', 'cards.transaction.payment', 'fx.order.expired'];
      const ofExpiry = () =>
        rx.received.map((r) => JSON.parse(r.body)).filter((e) => expiries.includes(e.event_type) && e.event_data.status === 'expired');
      await until(
        () => ofExpiry().length >= 3,
        async () => undefined,
      );
      const events = ofExpiry().sort((x, y) => x.sequence - y.sequence);
      const dueAt = {
        'collection.status.expired': new Date(work.collection.expires_at).getTime(),
        'cards.transaction.payment': new Date(work.authorization.expires_at).getTime() + 1,
        'fx.order.expired': new Date(work.order.expires_at).getTime(),
      } as Record<string, number>;
      expect(new Set(events.map((e) => e.event_id)).size).toBe(events.length);
      expect(events.map((e) => e.event_type)).toEqual([...expiries].sort((x, y) => dueAt[x]! - dueAt[y]!));
      for (const e of events) expect(new Date(e.timestamp).getTime(), e.event_type).toBe(dueAt[e.event_type]);

      // Two more months: more stops (a midnight each) than one tick walks; the next tick goes on.
      const further = new Date(start.getTime() + 93 * DAY).toISOString();
      expect((await a.api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: further })).status).toBe(202);
      expect(await whenReady(a.api, clock.id)).toMatchObject({ frozen_time: further });
    } finally {
      await workers.stop();
      await rx.close();
    }
  });
});

describe('the daily limit on a test clock', () => {
  it('resets when the clock passes midnight UTC, and not before', async () => {
    const { tenant, api } = await sandboxBusiness(t, 'Daily Co');
    await setSettings(t.db, tenant.tenant_id, { kyc_limits: { basic: { USD: { per_transaction: '100.00', daily: '150.00' } } } });
    const start = new Date(Math.floor(Date.now() / DAY) * DAY + 12 * 3_600_000);
    const clock = (await api.post(CLOCKS, { frozen_time: start.toISOString() })).body.data;
    await api.post(`${CLOCKS}/${clock.id}/attach`);
    const customer = (await api.post('/v1/customers', johnDoe())).body.data.id;
    expect((await api.post(`/v1/simulations/kyc/${customer}`, { outcome: 'approved', level: 'basic' })).status).toBe(200);
    const from = (await api.post('/v1/accounts', { currency: 'USD', label: 'spend', customer_id: customer })).body.data.id;
    const to = (await api.post('/v1/accounts', { currency: 'USD', label: 'shop' })).body.data.id;
    await api.post(`/v1/simulations/accounts/${from}/fund`, { amount: '500.00' });
    const pay = () =>
      api.post('/v1/transfer', {
        source: { source_type: 'internal_account', id: from },
        destination: { destination_type: 'internal_account', id: to },
        amount: '100.00',
      });
    expect((await pay()).status).toBe(200);
    const refused = await pay();
    expect(refused.body.error).toMatchObject({ code: 'limit_exceeded', details: [{ code: 'daily_limit' }] });

    const workers = startWorkers({ config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log });
    try {
      // Eleven hours: still the same day on the clock.
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: new Date(start.getTime() + 11 * 3_600_000).toISOString() });
      await whenReady(api, clock.id);
      expect((await pay()).body.error?.code).toBe('limit_exceeded');
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: new Date(start.getTime() + 13 * 3_600_000).toISOString() });
      await whenReady(api, clock.id);
    } finally {
      await workers.stop();
    }
    expect((await pay()).status).toBe(200);
  });
});
