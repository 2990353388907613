import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/workers/index.js';
import { sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
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
    } finally {
      await workers.stop();
      await rx.close();
    }
  });
});
