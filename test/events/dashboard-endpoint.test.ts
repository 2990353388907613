import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { runWebhookTick } from '../../src/modules/webhooks/delivery.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';
import { startReceiver } from '../webhooks/receiver.js';

/** The dashboard's endpoint page shows the delivery circuit and replays an endpoint's failed events. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('dashboard webhook endpoint page', () => {
  it('shows an open circuit (events waiting, none dropped) and replays failed events', async () => {
    let status = 500;
    const rx = await startReceiver(() => ({ status }));
    try {
      const agent = new Agent(t);
      await agent.signup(`replay+${newId().slice(-12)}@example.com`);
      await agent.get('/dashboard/keys');
      const api = clientFor(t, agent.textOf('new-secret-sandbox')!);
      const endpoint = (await api.post('/v1/webhooks/endpoints', { url: rx.url })).body.data.id as string;
      await agent.get(`/dashboard/webhooks/endpoints/${endpoint}`);
      expect(agent.textOf('wh-circuit')).toBe('closed');

      for (let i = 0; i < 3; i++) await api.post('/v1/customers', johnDoe());
      // Every attempt fails; after two in a row (and no success ever) the circuit opens.
      const options = {
        circuitThreshold: 2,
        circuitOpenMs: 60_000,
        retryDelaysMs: [0, 0, 0],
        jitter: 0,
        deliveryBatch: 1,
        allowLoopback: true,
      };
      for (let i = 0; i < 4; i++) await runWebhookTick({ db: t.db, sealer: t.sealer }, options);
      expect(rx.received).toHaveLength(2);
      const shown = (await api.get(`/v1/webhooks/endpoints/${endpoint}`)).body.data;
      expect(shown).toMatchObject({ circuit: 'open', consecutive_failures: 2, status: 'enabled' });
      await agent.get(`/dashboard/webhooks/endpoints/${endpoint}`);
      expect(agent.textOf('wh-circuit')).toBe('open');
      // Nothing dropped: every delivery still waits.
      const history = (await api.get(`/v1/webhooks/history?endpoint_id=${endpoint}`)).body.data.items as { status: string }[];
      expect(history.map((d) => d.status).sort()).toEqual(['pending', 'retrying', 'retrying']);

      // A replay from the page (failed deliveries of the last hour): none failed yet, none queued twice.
      const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 16);
      const res = await agent.post(`/dashboard/webhooks/endpoints/${endpoint}/replay`, { from, to: null, scope: 'all' });
      expect(res.statusCode).toBe(303);
      const replays = await t.db.selectFrom('webhook_replays').selectAll().where('endpoint_id', '=', endpoint).execute();
      expect(replays).toHaveLength(1);
      expect(replays[0]!.queued).toBe(0);
      const bad = await agent.post(`/dashboard/webhooks/endpoints/${endpoint}/replay`, { from: 'yesterday', scope: 'all' });
      expect(bad.statusCode).toBe(400);
      status = 200;
    } finally {
      await rx.close();
    }
  });
});
