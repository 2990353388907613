import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fanOutTick, runWebhookTick, type DeliveryOptions } from '../../src/modules/webhooks/delivery.js';
import { clientFor, johnDoe, sandboxBusiness, startTestApp, type TestApp, type TestResponse } from '../harness.js';
import { startReceiver, until, type Receiver } from '../webhooks/receiver.js';

/**
 * Catching up on missed events: GET /v1/events (cursor pages either way, filters by type, time
 * range and resource), GET /v1/events/{id}, the per-business sequence numbers (in the list and in
 * each webhook), and the replay of an endpoint's failed (or all) events over a time range.
 */
let t: TestApp;
const receivers: Receiver[] = [];
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await t.close();
});

const FAST: Partial<DeliveryOptions> = { retryDelaysMs: [], jitter: 0, timeoutMs: 5000, allowLoopback: true };
const deliverAll = async () => {
  while (await runWebhookTick({ db: t.db, sealer: t.sealer }, FAST));
};

describe('GET /v1/events', () => {
  it('lists events with their sequence, both ways, filtered, in cursor pages; other businesses see none', async () => {
    const { api, tenant } = await sandboxBusiness(t, 'Catch Up Co');
    const customers: string[] = [];
    // Four requests at a time: their events commit in an order of their own.
    await Promise.all(
      [0, 1, 2, 3].map(async () => {
        for (let i = 0; i < 3; i++) customers.push((await api.post('/v1/customers', johnDoe())).body.data.id as string);
      }),
    );
    while (await fanOutTick(t.db));

    const all = await api.get('/v1/events?items_per_page=100');
    expect(all.status).toBe(200);
    const items = all.body.data.items as {
      event_id: string;
      event_type: string;
      event_group_id: string;
      sequence: number;
      tenant_id: string;
    }[];
    expect(items.length).toBe(12);
    expect(items.every((e) => e.tenant_id === tenant.tenant_id && e.event_type === 'customer.created')).toBe(true);
    // Sequence numbers 1..12, no gaps, no repeats.
    expect(items.map((e) => e.sequence).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));

    // Newest first by default, oldest first with order=asc; cursor pages cover everything once.
    const ids = items.map((e) => e.event_id);
    expect(ids).toEqual([...ids].sort().reverse());
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: TestResponse = await api.get(`/v1/events?order=asc&items_per_page=5${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      seen.push(...(page.body.data.items as { event_id: string }[]).map((e) => e.event_id));
      cursor = page.body.data.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    // Filters: resource, type, time range.
    const one = await api.get(`/v1/events?resource_id=${customers[5]}`);
    expect(one.body.data.items.map((e: { event_group_id: string }) => e.event_group_id)).toEqual([customers[5]]);
    expect((await api.get('/v1/events?event_type=transfer.status.completed')).body.data.items).toEqual([]);
    expect((await api.get('/v1/events?event_type=customer.created')).body.data.total_items).toBe(12);
    expect((await api.get('/v1/events?to=2000-01-01')).body.data.items).toEqual([]);
    expect((await api.get(`/v1/events?from=${new Date(Date.now() - 3_600_000).toISOString()}`)).body.data.total_items).toBe(12);

    // One event, as its webhook carries it.
    const single = await api.get(`/v1/events/${ids[0]}`);
    expect(single.status).toBe(200);
    expect(single.body.data).toEqual(items[0]);

    // Bad filters are 400; unknown ids and other businesses' ids are 404.
    for (const q of ['event_type=nope', 'order=up', 'from=yesterday', 'cursor=zzz', 'items_per_page=101']) {
      const bad = await api.get(`/v1/events?${q}`);
      expect(bad.status, q).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
    }
    expect((await api.get('/v1/events/0190a000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await api.get('/v1/events/not-a-uuid')).status).toBe(400);
    const other = await sandboxBusiness(t, 'Someone Else Co');
    expect((await other.api.get(`/v1/events/${ids[0]}`)).status).toBe(404);
    expect((await other.api.get('/v1/events')).body.data.items).toEqual([]);
    expect((await clientFor(t, tenant.live.secret_key).get('/v1/events')).body.data.items).toEqual([]);
    expect((await clientFor(t, tenant.sandbox.public_key).get('/v1/events')).status).toBe(403);
  });

  it('sends the sequence in the signed payload and the webhook-sequence header', async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    const { api } = await sandboxBusiness(t, 'Sequenced Co');
    const created = (await api.post('/v1/webhooks/endpoints', { url: rx.url })).body.data;
    for (let i = 0; i < 3; i++) await api.post('/v1/customers', johnDoe());
    await deliverAll();
    expect(rx.received).toHaveLength(3);
    const wh = new Webhook(created.secret);
    const sequences = rx.received.map((r) => {
      const body = wh.verify(r.body, r.headers as Record<string, string>) as { sequence: number };
      expect(r.headers['webhook-sequence']).toBe(String(body.sequence));
      return body.sequence;
    });
    expect(sequences.sort()).toEqual([1, 2, 3]);
  });
});

describe('POST /v1/webhooks/endpoints/{id}/replay', () => {
  it("replays an endpoint's failed (or all) events of a range once, and never twice at once", async () => {
    let status = 500;
    const rx = await startReceiver(() => ({ status }));
    receivers.push(rx);
    const { api } = await sandboxBusiness(t, 'Replay Co');
    const endpoint = (await api.post('/v1/webhooks/endpoints', { url: rx.url })).body.data.id as string;
    const from = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 4; i++) await api.post('/v1/customers', johnDoe());
    await deliverAll(); // every delivery fails (no retries in this schedule) and the endpoint is disabled
    expect(rx.received).toHaveLength(4);
    const path = `/v1/webhooks/endpoints/${endpoint}/replay`;

    // A disabled endpoint cannot replay: 409.
    const disabled = await api.post(path, { from });
    expect(disabled.status).toBe(409);
    expect(disabled.body.error.code).toBe('invalid_state_transition');
    expect((await api.patch(`/v1/webhooks/endpoints/${endpoint}`, { status: 'enabled' })).status).toBe(200);

    status = 200;
    const first = await api.post(path, { from });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ endpoint_id: endpoint, scope: 'failed', queued: 4 });
    // Replaying again before they are sent queues nothing: no event is sent twice at once.
    const again = await api.post(path, { from, scope: 'failed' });
    expect(again.body.data.queued).toBe(0);
    const all = await api.post(path, { from, scope: 'all' });
    expect(all.body.data).toMatchObject({ queued: 0, already_queued: 4 });
    await deliverAll();
    expect(rx.received).toHaveLength(8);
    const events = rx.received.slice(4).map((r) => r.headers['webhook-id']);
    expect(new Set(events).size).toBe(4);

    // Nothing failed any more; scope all sends every event of the range once more.
    expect((await api.post(path, { from })).body.data.queued).toBe(0);
    expect((await api.post(path, { from, scope: 'all' })).body.data.queued).toBe(4);
    await deliverAll();
    expect(rx.received).toHaveLength(12);
    const history = await api.get(`/v1/webhooks/history?endpoint_id=${endpoint}`);
    expect(history.body.data.items.every((d: { status: string }) => d.status === 'sent')).toBe(true);

    // Bounded and validated.
    const tooLong = await api.post(path, { from: '2026-01-01', to: '2026-02-01' });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.details[0].field).toBe('to');
    expect((await api.post(path, { from, to: '2000-01-01' })).status).toBe(400);
    expect((await api.post(path, {})).status).toBe(400);
    expect((await api.post(path, { from, scope: 'some' })).status).toBe(400);
    expect((await api.post(path, { from, extra: 1 })).status).toBe(400);
    expect((await api.post(path, { from }, { idempotencyKey: null })).status).toBe(400);
    expect((await api.post('/v1/webhooks/endpoints/0190a000-0000-7000-8000-000000000000/replay', { from })).status).toBe(404);
    const other = await sandboxBusiness(t, 'Not Yours Co');
    expect((await other.api.post(path, { from })).status).toBe(404);
    await until(
      () => rx.received.length === 12,
      async () => undefined,
    );
  });
});
