import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/workers/index.js';
import { johnDoe, sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
import { startReceiver, until } from '../webhooks/receiver.js';
import { CLOCKS, whenReady } from './clock-helpers.js';

/** A failed delivery's retry, an hour away on the wall clock, goes out once the business's clock passes it. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('webhook retries on a test clock', () => {
  it('are brought forward by the time the clock moves', async () => {
    const rx = await startReceiver((_req, n) => ({ status: n === 1 ? 500 : 200 }));
    const { api } = await sandboxBusiness(t, 'Retry Clock Co');
    expect((await api.post('/v1/webhooks/endpoints', { url: rx.url })).status).toBe(201);
    const start = new Date();
    const clock = (await api.post(CLOCKS, { frozen_time: start.toISOString() })).body.data;
    await api.post(`${CLOCKS}/${clock.id}/attach`);
    const workers = startWorkers(
      { config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log },
      { webhooks: { retryDelaysMs: [3_600_000], jitter: 0, timeoutMs: 5000 } },
    );
    try {
      await api.post('/v1/customers', johnDoe());
      const delivery = async () => (await api.get('/v1/webhooks/history')).body.data.items[0];
      await until(
        async () => (await delivery())?.status === 'retrying',
        async () => undefined,
      );
      expect(rx.received).toHaveLength(1);
      // Half an hour: the retry is still half an hour away.
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: new Date(start.getTime() + 1_800_000).toISOString() });
      await whenReady(api, clock.id);
      expect((await delivery()).status).toBe('retrying');
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: new Date(start.getTime() + 3_700_000).toISOString() });
      await whenReady(api, clock.id);
      await until(
        async () => (await delivery()).status === 'sent',
        async () => undefined,
      );
    } finally {
      await workers.stop();
      await rx.close();
    }
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.body).toBe(rx.received[0]!.body);
  });
});
