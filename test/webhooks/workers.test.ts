import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fanOutTick, runWebhookTick } from '../../src/modules/webhooks/delivery.js';
import { claimDueDeliveries } from '../../src/modules/webhooks/queue-repo.js';
import { newId } from '../../src/lib/ids.js';
import { startWorkers } from '../../src/workers/index.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';
import { sleep, startReceiver, until } from './receiver.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('webhook jobs', () => {
  it('run from startWorkers: a registered URL gets each event of its environment, signed', async () => {
    const rx = await startReceiver();
    const biz = await t.tenant('Worker Co');
    const api = clientFor(t, biz.sandbox.secret_key);
    const ep = (await api.post('/v1/webhooks/endpoints', { url: rx.url })).body.data;
    const workers = startWorkers(
      { config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log },
      { webhooks: { retryDelaysMs: [20, 20, 20], jitter: 0, timeoutMs: 5000 } },
    );
    try {
      for (let i = 0; i < 3; i++) await api.post('/v1/customers', johnDoe());
      await until(
        () => rx.received.length >= 3,
        async () => undefined,
      );
    } finally {
      await workers.stop();
      await rx.close();
    }
    for (const r of rx.received) {
      const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((h) => [h, String(r.headers[h])]));
      expect((new Webhook(ep.secret).verify(r.body, headers) as any).event_type).toBe('customer.created');
    }
  });

  // Only PostgreSQL can show it: PGlite runs one transaction at a time.
  it.skipIf(!process.env.DATABASE_URL)('a second worker skips the deliveries the first one holds, without waiting', async () => {
    const rx = await startReceiver();
    const biz = await t.tenant('Skip Locked Co');
    const api = clientFor(t, biz.sandbox.secret_key);
    await api.post('/v1/webhooks/endpoints', { url: rx.url });
    for (let i = 0; i < 4; i++) await api.post('/v1/customers', johnDoe());
    while (await fanOutTick(t.db));
    await rx.close();
    await t.db.transaction().execute(async (first) => {
      const held = await claimDueDeliveries(first, 2, 60_000, newId());
      expect(held).toHaveLength(2);
      await t.db.transaction().execute(async (second) => {
        await sql`set local lock_timeout = '2s'`.execute(second);
        const rest = await claimDueDeliveries(second, 10, 60_000, newId());
        expect(rest.length).toBeGreaterThanOrEqual(2);
        expect(rest.filter((id) => held.includes(id))).toEqual([]);
      });
    });
  });
});

describe('holding and moving up deliveries', () => {
  const slow = { retryDelaysMs: [3_600_000], jitter: 0, timeoutMs: 5000, allowLoopback: true };

  it('holds deliveries of a disabled endpoint and sends them when it is enabled again', async () => {
    const rx = await startReceiver();
    const api = clientFor(t, (await t.tenant('Pause Co')).sandbox.secret_key);
    const ep = (await api.post('/v1/webhooks/endpoints', { url: rx.url })).body.data;
    await api.post('/v1/customers', johnDoe());
    while (await fanOutTick(t.db));
    await api.patch(`/v1/webhooks/endpoints/${ep.id}`, { status: 'disabled' });
    await runWebhookTick({ db: t.db, sealer: t.sealer }, slow);
    await sleep(50);
    expect(rx.received).toHaveLength(0);
    expect((await api.get('/v1/webhooks/history')).body.data.items[0].status).toBe('pending');
    await api.patch(`/v1/webhooks/endpoints/${ep.id}`, { status: 'enabled' });
    await until(
      () => rx.received.length >= 1,
      () => runWebhookTick({ db: t.db, sealer: t.sealer }, slow),
    );
    await rx.close();
  });

  it('moves a waiting retry up to now on resend, keeping its schedule', async () => {
    const rx = await startReceiver((_r, n) => (n === 1 ? { status: 500 } : { status: 200 }));
    const api = clientFor(t, (await t.tenant('Resend Co')).sandbox.secret_key);
    await api.post('/v1/webhooks/endpoints', { url: rx.url });
    await api.post('/v1/customers', johnDoe());
    await until(
      () => rx.received.length >= 1,
      () => runWebhookTick({ db: t.db, sealer: t.sealer }, slow),
    );
    await until(
      async () => (await api.get('/v1/webhooks/history')).body.data.items[0].status === 'retrying',
      () => sleep(10),
    );
    const [d] = (await api.get('/v1/webhooks/history')).body.data.items;
    expect(Date.parse(d.next_attempt) - Date.now()).toBeGreaterThan(3_500_000);
    const res = await api.post(`/v1/webhooks/event/send/${d.id}`);
    expect(res.body.data.status).toBe('retrying');
    await until(
      () => rx.received.length >= 2,
      () => runWebhookTick({ db: t.db, sealer: t.sealer }, slow),
    );
    await until(
      async () => (await api.get(`/v1/webhooks/event/${d.id}`)).body.data.status === 'sent',
      () => sleep(10),
    );
    const calls = (await api.get(`/v1/webhooks/calls/${d.id}`)).body.data.items;
    expect(calls.map((c: any) => [c.attempt, c.trigger, c.status_code])).toEqual([
      [2, 'scheduled', 200],
      [1, 'scheduled', 500],
    ]);
    await rx.close();
  });
});
