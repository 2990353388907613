import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryTick, fanOutTick, runWebhookTick, type DeliveryOptions } from '../../src/modules/webhooks/delivery.js';
import { recordEvent } from '../../src/modules/webhooks/outbox.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { sleep, startReceiver, until, type Receiver } from './receiver.js';

let t: TestApp;
const receivers: Receiver[] = [];
/**
 * Fast schedule for tests: three retries 30 ms apart, no jitter. The timeout stays generous: the
 * receivers share this process with PGlite, and a timed-out attempt that did arrive would be
 * retried (at least once delivery), which would make exact counts flaky under load.
 */
const FAST: Partial<DeliveryOptions> = { retryDelaysMs: [30, 30, 30], jitter: 0, timeoutMs: 5000, allowLoopback: true };
const SHORT_TIMEOUT = { ...FAST, timeoutMs: 300 };

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await t.close();
});

const tick = (options: Partial<DeliveryOptions> = FAST) => runWebhookTick({ db: t.db, sealer: t.sealer }, options);

async function receiver(...args: Parameters<typeof startReceiver>) {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

async function business(): Promise<{ biz: CreatedTenant; api: Client; live: Client }> {
  const biz = await t.tenant('Hooks Co');
  return { biz, api: clientFor(t, biz.sandbox.secret_key), live: clientFor(t, biz.live.secret_key) };
}

async function endpoint(api: Client, url: string, event_types?: string[]) {
  const res = await api.post('/v1/webhooks/endpoints', { url, ...(event_types ? { event_types } : {}) });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; secret: string };
}

async function customer(api: Client): Promise<string> {
  const res = await api.post('/v1/customers', johnDoe());
  expect(res.status).toBe(200);
  return res.body.data.id;
}

const hookHeaders = (r: { headers: Record<string, unknown> }) => ({
  'webhook-id': String(r.headers['webhook-id']),
  'webhook-timestamp': String(r.headers['webhook-timestamp']),
  'webhook-signature': String(r.headers['webhook-signature']),
});

describe('signed delivery', () => {
  it('delivers the contract payload, verifiable with the standardwebhooks package on the raw body', async () => {
    const { biz, api } = await business();
    const rx = await receiver();
    const ep = await endpoint(api, rx.url);
    const customerId = await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(),
    );

    const got = rx.received[0]!;
    // The README's recipe: verify the raw body with the endpoint's secret, then trust it.
    const payload = new Webhook(ep.secret).verify(got.body, hookHeaders(got)) as any;
    expect(payload).toMatchObject({
      tenant_id: biz.tenant_id,
      environment: 'sandbox',
      event_type: 'customer.created',
      event_category: 'customer',
      event_group_id: customerId,
    });
    expect(Object.keys(payload).sort()).toEqual([
      'environment',
      'event_category',
      'event_data',
      'event_group_id',
      'event_id',
      'event_type',
      'sequence', // the contract's added field: the event's number in its business and environment
      'tenant_id',
      'timestamp',
    ]);
    expect(payload.event_data).toEqual((await api.get(`/v1/customers/${customerId}`)).body.data);
    expect(got.headers['webhook-id']).toBe(payload.event_id);
    expect(got.headers['content-type']).toBe('application/json');
    expect(Math.abs(Number(got.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(5);
    // A tampered body or another secret does not verify.
    expect(() => new Webhook(ep.secret).verify(got.body.replace('John', 'Jane'), hookHeaders(got))).toThrow();
    const other = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    expect(() => new Webhook(other).verify(got.body, hookHeaders(got))).toThrow();

    const history = await api.get('/v1/webhooks/history');
    expect(history.body.data.items).toHaveLength(1);
    expect(history.body.data.items[0]).toMatchObject({
      event_id: payload.event_id,
      endpoint_id: ep.id,
      event_type: 'customer.created',
      path: rx.url,
      http_method: 'POST',
      status: 'sent',
      response_status_code: 200,
      attempts: 1,
      next_attempt: null,
    });
  });

  it('sends nothing to endpoints created after the event', async () => {
    const { api } = await business();
    await customer(api);
    await tick();
    const rx = await receiver();
    await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(),
    );
    await sleep(50);
    await tick();
    expect(rx.received).toHaveLength(1);
  });
});

describe('outages and retries', () => {
  it('recovers every event after the receiver was down, each with a stable webhook-id', async () => {
    const { api } = await business();
    const probe = await startReceiver();
    const port = probe.port;
    await probe.close(); // nothing listens on this port now
    const ep = await endpoint(api, `http://127.0.0.1:${port}/hook`);
    for (let i = 0; i < 3; i++) await customer(api);
    await tick();
    const failed = await api.get(`/v1/webhooks/history?endpoint_id=${ep.id}`);
    expect(failed.body.data.items.map((d: any) => d.status)).toEqual(['retrying', 'retrying', 'retrying']);

    const rx = await receiver(undefined, port);
    await until(
      () => rx.received.length >= 3,
      () => tick(),
    );
    const ids = rx.received.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(3);
    for (const item of failed.body.data.items) {
      const calls = await api.get(`/v1/webhooks/calls/${item.id}`);
      const sent = calls.body.data.items.map((c: any) => c.request_headers['webhook-id']);
      expect(new Set(sent)).toEqual(new Set([item.event_id]));
      expect(ids).toContain(item.event_id);
      expect(calls.body.data.items.at(-1).error).toMatch(/ECONNREFUSED/);
      expect(calls.body.data.items[0]).toMatchObject({ status_code: 200, trigger: 'scheduled' });
      // The signature is never stored.
      expect(calls.body.data.items[0].request_headers['webhook-signature']).toBeUndefined();
    }
    const done = await api.get(`/v1/webhooks/history?endpoint_id=${ep.id}&status=sent`);
    expect(done.body.data.total_items).toBe(3);
  });

  it('retries a 500 and records status, latency and a bounded response excerpt', async () => {
    const { api } = await business();
    const rx = await receiver((_r, n) => (n === 1 ? { status: 500, body: 'x'.repeat(10_000) } : { status: 204 }));
    const ep = await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 2,
      () => tick(),
    );
    await until(
      async () => (await api.get('/v1/webhooks/history')).body.data.items[0].status === 'sent',
      () => tick(),
    );
    const [delivery] = (await api.get('/v1/webhooks/history')).body.data.items;
    expect(delivery.attempts).toBe(2);
    const calls = (await api.get(`/v1/webhooks/calls/${delivery.id}`)).body.data.items;
    expect(calls.map((c: any) => c.status_code)).toEqual([204, 500]);
    // A loopback receiver is not public: its status is kept, never its body or headers.
    expect(calls[1].response_body).toBeNull();
    expect(calls[1].response_headers).toBeNull();
    expect(calls[1].duration_ms).toBeGreaterThanOrEqual(0);
    expect(rx.received[0]!.headers['webhook-id']).toBe(rx.received[1]!.headers['webhook-id']);
    expect(rx.received[0]!.headers['webhook-timestamp']).toBeDefined();
    const perEndpoint = await api.get(`/v1/webhooks/endpoints/${ep.id}/attempts`);
    expect(perEndpoint.body.data.items.map((c: any) => c.status_code)).toEqual([204, 500]);
  });

  it('times out a receiver that hangs, records it, and retries', async () => {
    const { api } = await business();
    const rx = await receiver((_r, n) => (n === 1 ? 'hang' : { status: 200 }));
    await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 2,
      () => tick(SHORT_TIMEOUT),
    );
    await until(
      async () => (await api.get('/v1/webhooks/history')).body.data.items[0].status === 'sent',
      () => tick(SHORT_TIMEOUT),
    );
    const [delivery] = (await api.get('/v1/webhooks/history')).body.data.items;
    const calls = (await api.get(`/v1/webhooks/calls/${delivery.id}`)).body.data.items;
    expect(calls.at(-1)).toMatchObject({ status_code: null, error: 'timed out after 300 ms' });
    expect(calls.at(-1).duration_ms).toBeGreaterThanOrEqual(290);
  });

  it('honours Retry-After', async () => {
    const { api } = await business();
    const rx = await receiver((_r, n) => (n === 1 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200 }));
    await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 2,
      () => tick(),
    );
    expect(rx.received[1]!.at - rx.received[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('disables the endpoint on 410', async () => {
    const { api } = await business();
    const rx = await receiver(() => ({ status: 410 }));
    const ep = await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(),
    );
    await until(
      async () => (await api.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data.status === 'disabled',
      () => tick(),
    );
    expect((await api.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data.disabled_reason).toBe('endpoint_gone');
    expect((await api.get('/v1/webhooks/history')).body.data.items[0].status).toBe('failed');
    await customer(api);
    await tick();
    await sleep(50);
    await tick();
    expect(rx.received).toHaveLength(1);
  });

  it('fails the delivery and disables the endpoint when the last scheduled attempt fails', async () => {
    const { api } = await business();
    const rx = await receiver(() => ({ status: 500 }));
    const ep = await endpoint(api, rx.url);
    await customer(api);
    await until(
      async () => (await api.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data.status === 'disabled',
      () => tick(),
    );
    expect(rx.received).toHaveLength(4); // the first attempt and the three retries of FAST
    const [delivery] = (await api.get('/v1/webhooks/history')).body.data.items;
    expect(delivery).toMatchObject({ status: 'failed', attempts: 4, next_attempt: null });
    expect((await api.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data.disabled_reason).toBe('retries_exhausted');

    // Manual resend needs the endpoint enabled; then it is one extra attempt.
    const refused = await api.post(`/v1/webhooks/event/send/${delivery.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('invalid_state_transition');
    await api.patch(`/v1/webhooks/endpoints/${ep.id}`, { status: 'enabled' });
    rx.setBehaviour(() => ({ status: 200 }));
    const resent = await api.post(`/v1/webhooks/event/send/${delivery.id}`);
    expect(resent.status).toBe(200);
    expect(resent.body.data).toMatchObject({
      id: delivery.id,
      event_id: delivery.event_id,
      status: 'pending',
      target_url: rx.url,
      event_category: 'customer',
    });
    await until(
      () => rx.received.length >= 5,
      () => tick(),
    );
    await until(
      async () => (await api.get(`/v1/webhooks/event/${delivery.id}`)).body.data.status === 'sent',
      () => tick(),
    );
    const detail = (await api.get(`/v1/webhooks/event/${delivery.id}`)).body.data;
    expect(detail).toMatchObject({ attempts: 5, response_status_code: 200, max_retries: 9, http_method: 'POST' });
    expect(detail.payload.event_id).toBe(delivery.event_id);
    const calls = (await api.get(`/v1/webhooks/calls/${delivery.id}`)).body.data.items;
    expect(calls[0]).toMatchObject({ trigger: 'manual', attempt: 5, status_code: 200 });
    expect(rx.received[4]!.headers['webhook-id']).toBe(rx.received[0]!.headers['webhook-id']);
  });
});

describe('manual resend', () => {
  it('resends a sent event, replays its idempotency key, and isolates other businesses and environments', async () => {
    const { api, live } = await business();
    const rx = await receiver();
    await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(),
    );
    const [d] = (await api.get('/v1/webhooks/history')).body.data.items;
    await until(
      async () => (await api.get(`/v1/webhooks/event/${d.id}`)).body.data.status === 'sent',
      () => tick(),
    );

    const key = 'resend-once';
    const first = await api.post(`/v1/webhooks/event/send/${d.id}`, undefined, { idempotencyKey: key });
    const again = await api.post(`/v1/webhooks/event/send/${d.id}`, undefined, { idempotencyKey: key });
    expect(first.status).toBe(200);
    expect(again.headers['idempotency-replayed']).toBe('true');
    await until(
      () => rx.received.length >= 2,
      () => tick(),
    );
    await sleep(50);
    await tick();
    expect(rx.received).toHaveLength(2);
    expect(rx.received[1]!.headers['webhook-id']).toBe(rx.received[0]!.headers['webhook-id']);
    // Verifying the body still works: signed afresh with a new timestamp.
    expect(Number(rx.received[1]!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(
      Number(rx.received[0]!.headers['webhook-timestamp']),
    );

    const stranger = clientFor(t, (await t.tenant('Stranger')).sandbox.secret_key);
    for (const c of [stranger, live]) {
      expect((await c.get(`/v1/webhooks/event/${d.id}`)).status).toBe(404);
      expect((await c.get(`/v1/webhooks/calls/${d.id}`)).status).toBe(404);
      expect((await c.post(`/v1/webhooks/event/send/${d.id}`)).status).toBe(404);
      expect((await c.get(`/v1/webhooks/history?event_id=${d.event_id}`)).body.data.items).toEqual([]);
    }
  });

  it('answers 409 for a deleted endpoint', async () => {
    const { api } = await business();
    const rx = await receiver();
    const ep = await endpoint(api, rx.url);
    await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(),
    );
    const [d] = (await api.get('/v1/webhooks/history')).body.data.items;
    await api.delete(`/v1/webhooks/endpoints/${ep.id}`);
    const res = await api.post(`/v1/webhooks/event/send/${d.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invalid_state_transition');
    // History of a deleted endpoint stays readable.
    expect((await api.get(`/v1/webhooks/event/${d.id}`)).status).toBe(200);
  });
});

describe('secret rotation', () => {
  it('signs with both secrets during the overlap, and only the new one after it', async () => {
    const { api } = await business();
    const rx = await receiver();
    const ep = await endpoint(api, rx.url);
    const rotated = (await api.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`, { expire_old_in_seconds: 3600 })).body.data;
    await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(),
    );
    const during = rx.received[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(() => new Webhook(ep.secret).verify(during.body, hookHeaders(during))).not.toThrow();
    expect(() => new Webhook(rotated.secret).verify(during.body, hookHeaders(during))).not.toThrow();

    // The overlap ends (as if an hour had passed): only the new secret signs.
    await t.db
      .updateTable('webhook_endpoints')
      .set({ previous_secret_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', ep.id)
      .execute();
    await customer(api);
    await until(
      () => rx.received.length >= 2,
      () => tick(),
    );
    const after = rx.received[1]!;
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(rotated.secret).verify(after.body, hookHeaders(after))).not.toThrow();
    expect(() => new Webhook(ep.secret).verify(after.body, hookHeaders(after))).toThrow();
    expect((await api.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data.previous_secret_expires_at).toBeNull();
  });
});

describe('filters and environments', () => {
  it('sends an endpoint only the event types it asked for', async () => {
    const { biz, api } = await business();
    const all = await receiver();
    const kyc = await receiver();
    const created = await receiver();
    await endpoint(api, all.url);
    await endpoint(api, kyc.url, ['customer.kyc.status.approved']);
    await endpoint(api, created.url, ['customer.created', 'account.created']);
    await customer(api);
    await t.db
      .transaction()
      .execute((trx) =>
        recordEvent(trx, { tenantId: biz.tenant_id, environment: 'sandbox' }, 'customer.kyc.status.approved', { id: 'c1' }),
      );
    await until(
      () => all.received.length >= 2 && kyc.received.length >= 1 && created.received.length >= 1,
      () => tick(),
    );
    await sleep(50);
    await tick();
    const types = (r: Receiver) => r.received.map((x) => JSON.parse(x.body).event_type).sort();
    expect(types(all)).toEqual(['customer.created', 'customer.kyc.status.approved']);
    expect(types(kyc)).toEqual(['customer.kyc.status.approved']);
    expect(types(created)).toEqual(['customer.created']);
    const filtered = await api.get('/v1/webhooks/history?event_type=customer.kyc.status.approved');
    expect(filtered.body.data.total_items).toBe(2);
  });

  it('keeps sandbox and live apart, and screens live DNS answers at delivery time', async () => {
    const { api, live } = await business();
    const rx = await receiver();
    await endpoint(api, rx.url);
    const liveEp = await endpoint(live, 'https://hooks.example.test/live');
    // The live name resolves to loopback (DNS rebinding): refused at connect time, never sent.
    const resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const options = { ...FAST, resolver };
    await customer(live);
    await customer(api);
    await until(
      () => rx.received.length >= 1,
      () => tick(options),
    );
    await until(
      async () => (await live.get('/v1/webhooks/history')).body.data.items[0]?.attempts >= 1,
      () => tick(options),
    );
    expect(rx.received.map((r) => JSON.parse(r.body).environment)).toEqual(['sandbox']);
    const liveHistory = (await live.get('/v1/webhooks/history')).body.data.items;
    expect(liveHistory).toHaveLength(1);
    expect(liveHistory[0]).toMatchObject({ endpoint_id: liveEp.id, status: 'retrying' });
    const calls = (await live.get(`/v1/webhooks/calls/${liveHistory[0].id}`)).body.data.items;
    expect(calls[0].error).toMatch(/refused: hooks\.example\.test resolves to a private/);
    expect((await api.get('/v1/webhooks/history')).body.data.items.map((d: any) => d.id)).not.toContain(liveHistory[0].id);
    await live.delete(`/v1/webhooks/endpoints/${liveEp.id}`); // no DNS lookups for it in later tests
  });

  it('refuses a sandbox name that resolves to a link-local address', async () => {
    const { api } = await business();
    const ep = await endpoint(api, 'http://metadata.example.test/x');
    const options = { ...FAST, resolver: async () => [{ address: '169.254.169.254', family: 4 }] };
    await customer(api);
    await until(
      async () => (await api.get('/v1/webhooks/history')).body.data.items[0]?.attempts >= 1,
      () => tick(options),
    );
    const [d] = (await api.get('/v1/webhooks/history')).body.data.items;
    const calls = (await api.get(`/v1/webhooks/calls/${d.id}`)).body.data.items;
    expect(calls[0].error).toBe('refused: metadata.example.test resolves to a link-local address');
    await api.delete(`/v1/webhooks/endpoints/${ep.id}`);
  });
});

describe('fan-out', () => {
  /** The event's row version (xmin changes when PostgreSQL writes a new version of the row). */
  const version = async (eventId: string) =>
    (await sql<{ v: string }>`select xmin::text as v from events where id = ${eventId}`.execute(t.db)).rows[0]?.v;
  const queued = async (eventId: string) =>
    (await sql`select 1 from event_fanout_queue where event_id = ${eventId}`.execute(t.db)).rows.length === 1;

  it('creates the deliveries of a queued event without rewriting the event', async () => {
    const { api } = await business();
    const rx = await receiver();
    const ep = await endpoint(api, rx.url);
    const customerId = await customer(api);
    const [event] = (
      await sql<{ id: string; event_type: string }>`select id, event_type from events where event_group_id = ${customerId}`.execute(t.db)
    ).rows;
    expect(event!.event_type).toBe('customer.created');
    expect(await queued(event!.id)).toBe(true);
    const before = await version(event!.id);

    while (await fanOutTick(t.db));

    // Before the queue table, the fan-out set events.fanned_out_at: a new version of every event
    // (its payload and index entries written again, since a partial index's predicate used it).
    expect(await version(event!.id)).toBe(before);
    expect(await queued(event!.id)).toBe(false);
    const deliveries = await sql<{ endpoint_id: string }>`select endpoint_id from webhook_deliveries where event_id = ${event!.id}`.execute(
      t.db,
    );
    expect(deliveries.rows).toEqual([{ endpoint_id: ep.id }]);
    await api.delete(`/v1/webhooks/endpoints/${ep.id}`);
  });

  it('drops a queue row whose event is missing instead of taking it again on every tick', async () => {
    const orphan = '01900000-0000-7000-8000-000000000001';
    await sql`insert into event_fanout_queue (event_id) values (${orphan})`.execute(t.db);
    while (await fanOutTick(t.db));
    expect(await queued(orphan)).toBe(false);
  });
});

describe('concurrent delivery workers', () => {
  it('never deliver one event twice (FOR UPDATE SKIP LOCKED)', async () => {
    const { api } = await business();
    const rx = await receiver();
    await endpoint(api, rx.url);
    const n = 30;
    for (let i = 0; i < n; i++) await customer(api);
    while (await fanOutTick(t.db));
    const deps = { db: t.db, sealer: t.sealer };
    const options = { ...FAST, timeoutMs: 15_000, deliveryBatch: 4 };
    await until(
      () => rx.received.length >= n,
      () => Promise.all([deliveryTick(deps, options), deliveryTick(deps, options), deliveryTick(deps, options)]),
    );
    await sleep(50);
    await Promise.all([deliveryTick(deps, options), deliveryTick(deps, options)]);
    const ids = rx.received.map((r) => r.headers['webhook-id']);
    expect(ids).toHaveLength(n);
    expect(new Set(ids).size).toBe(n);
    const sent = await api.get('/v1/webhooks/history?status=sent&items_per_page=100');
    expect(sent.body.data.total_items).toBe(n);
    expect(sent.body.data.items.every((d: any) => d.attempts === 1)).toBe(true);
  });
});
