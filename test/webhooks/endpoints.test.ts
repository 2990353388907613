import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;
let live: Client;
let other: Client;

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant('Hooks Co');
  api = clientFor(t, biz.sandbox.secret_key);
  live = clientFor(t, biz.live.secret_key);
  other = clientFor(t, (await t.tenant('Other Co')).sandbox.secret_key);
});
afterAll(() => t.close());

const SECRET_RE = /^whsec_[A-Za-z0-9+/]{43}=$/;

describe('POST /v1/webhooks/endpoints', () => {
  it('creates an endpoint: 201 with the whsec_ secret of 32 random bytes', async () => {
    const res = await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/hooks', event_types: ['customer.created'] });
    expect(res.status).toBe(201);
    expect(res.body.error).toBeNull();
    const ep = res.body.data;
    expect(ep).toMatchObject({ url: 'https://example.com/hooks', event_types: ['customer.created'], status: 'enabled' });
    expect(ep.secret).toMatch(SECRET_RE);
    expect(Buffer.from(ep.secret.slice(6), 'base64')).toHaveLength(32);
  });

  it('replays an idempotent create with the same secret, and stores it sealed', async () => {
    const key = newId();
    const first = await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/a' }, { idempotencyKey: key });
    const again = await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/a' }, { idempotencyKey: key });
    expect(again.status).toBe(201);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.body.data.secret).toBe(first.body.data.secret);
    expect(again.body.data.id).toBe(first.body.data.id);
    const stored = await t.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirstOrThrow();
    expect(stored.response_sealed).toBe(true);
    expect(stored.response_body).not.toContain('whsec_');
    const row = await t.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', first.body.data.id).executeTakeFirstOrThrow();
    expect(row.secret_sealed).not.toContain('whsec_');
    expect(t.sealer.open(row.secret_sealed, `webhook-endpoint:${row.id}`)).toBe(first.body.data.secret);
  });

  it('answers 422 idempotency_key_reused for the same key with another body', async () => {
    const key = newId();
    await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/b' }, { idempotencyKey: key });
    const res = await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/c' }, { idempotencyKey: key });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('idempotency_key_reused');
  });

  it('rejects bad bodies with 400 validation_failed naming each field', async () => {
    const cases: [unknown, string][] = [
      [{}, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://example.com/x' }, 'url'],
      [{ url: 'https://user:pw@example.com/x' }, 'url'],
      [{ url: 'https://example.com', event_types: ['customer.deleted'] }, 'event_types.0'],
      [{ url: 'https://example.com', event_types: 'customer.created' }, 'event_types'],
      [{ url: 'https://example.com', colour: 'red' }, 'colour'],
    ];
    for (const [body, field] of cases) {
      const res = await api.post('/v1/webhooks/endpoints', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.map((d: any) => d.field)).toContain(field);
    }
  });

  it('allows http and loopback in sandbox only', async () => {
    expect((await api.post('/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/x' })).status).toBe(201);
    expect((await api.post('/v1/webhooks/endpoints', { url: 'http://localhost:9/x' })).status).toBe(201);
    // Loopback only (the test server's development setting): private networks stay refused.
    expect((await api.post('/v1/webhooks/endpoints', { url: 'http://10.0.0.5:8080/x' })).status).toBe(400);
    // Link-local (cloud metadata services) is refused even in sandbox.
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://[fe80::1]/x']) {
      const res = await api.post('/v1/webhooks/endpoints', { url });
      expect(res.status, url).toBe(400);
      expect(res.body.error.message).toMatch(/link-local/);
    }
    for (const url of [
      'http://example.com/x',
      'https://127.0.0.1/x',
      'https://localhost/x',
      'https://10.1.2.3/x',
      'https://192.168.0.10/x',
      'https://172.16.5.4/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/x',
      'https://[fe80::1]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://intranet/x',
    ]) {
      const res = await live.post('/v1/webhooks/endpoints', { url });
      expect(res.status, url).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details[0].field).toBe('url');
      expect(res.body.error.message.length).toBeGreaterThan(10);
    }
    expect((await live.post('/v1/webhooks/endpoints', { url: 'https://hooks.example.com/x' })).status).toBe(201);
  });

  it('answers 400 missing_idempotency_key and invalid_idempotency_key', async () => {
    const none = await api.post('/v1/webhooks/endpoints', { url: 'https://example.com' }, { idempotencyKey: null });
    expect(none.body.error.code).toBe('missing_idempotency_key');
    const bad = await api.post('/v1/webhooks/endpoints', { url: 'https://example.com' }, { idempotencyKey: 'é' });
    expect(bad.body.error.code).toBe('invalid_idempotency_key');
  });

  it('answers 415 and 400 invalid_json for bodies that are not JSON', async () => {
    const res = await api.post('/v1/webhooks/endpoints', 'url=x', { headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(415);
    const broken = await api.post('/v1/webhooks/endpoints', '{"url":');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_json');
  });

  it('answers 413 payload_too_large over 1 MiB', async () => {
    const res = await api.post('/v1/webhooks/endpoints', { url: `https://example.com/${'a'.repeat(1_100_000)}` });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('caps endpoints per environment with 422 limit_exceeded', async () => {
    const b = await t.tenant('Many Hooks');
    const c = clientFor(t, b.sandbox.secret_key);
    for (let i = 0; i < 20; i++) expect((await c.post('/v1/webhooks/endpoints', { url: `https://example.com/${i}` })).status).toBe(201);
    const res = await c.post('/v1/webhooks/endpoints', { url: 'https://example.com/21' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('limit_exceeded');
    // The other environment has its own allowance.
    expect((await clientFor(t, b.live.secret_key).post('/v1/webhooks/endpoints', { url: 'https://example.com/1' })).status).toBe(201);
  });
});

describe('reading, updating and deleting endpoints', () => {
  it('never returns the secret from GET, and lists newest first with pagination', async () => {
    const b = await t.tenant('List Co');
    const c = clientFor(t, b.sandbox.secret_key);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await c.post('/v1/webhooks/endpoints', { url: `https://example.com/${i}` })).body.data.id);
    const page = await c.get('/v1/webhooks/endpoints?items_per_page=2');
    expect(page.status).toBe(200);
    expect(page.body.data).toMatchObject({ page: 1, items_per_page: 2, total_items: 3, total_pages: 2 });
    expect(page.body.data.items.map((e: any) => e.id)).toEqual([ids[2], ids[1]]);
    const next = await c.get(`/v1/webhooks/endpoints?items_per_page=2&cursor=${page.body.data.next_cursor}`);
    expect(next.body.data.items.map((e: any) => e.id)).toEqual([ids[0]]);
    const one = await c.get(`/v1/webhooks/endpoints/${ids[0]}`);
    expect(one.status).toBe(200);
    expect(one.text).not.toContain('whsec_');
    expect(one.body.data.secret).toBeUndefined();
    expect(page.text).not.toContain('whsec_');
    expect((await c.get('/v1/webhooks/endpoints?items_per_page=0')).status).toBe(400);
    expect((await c.get('/v1/webhooks/endpoints?status=paused')).status).toBe(400);
  });

  it('patches url, event types and status', async () => {
    const ep = (await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/p' })).body.data;
    const res = await api.patch(`/v1/webhooks/endpoints/${ep.id}`, {
      url: 'https://example.com/q',
      event_types: ['customer.created', 'transfer.status.completed'],
      status: 'disabled',
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      url: 'https://example.com/q',
      event_types: ['customer.created', 'transfer.status.completed'],
      status: 'disabled',
      disabled_reason: 'disabled_by_user',
    });
    const back = await api.patch(`/v1/webhooks/endpoints/${ep.id}`, { status: 'enabled', event_types: null });
    expect(back.body.data).toMatchObject({ status: 'enabled', disabled_reason: null, event_types: [] });
    const filtered = await api.get('/v1/webhooks/endpoints?status=enabled');
    expect(filtered.body.data.items.every((e: any) => e.status === 'enabled')).toBe(true);
  });

  it('rejects bad patches with 400 and changes nothing', async () => {
    const ep = (await live.post('/v1/webhooks/endpoints', { url: 'https://example.com/live' })).body.data;
    for (const body of [
      { status: 'paused' },
      { url: 'http://example.com/x' },
      { url: 'https://10.0.0.1/x' },
      { event_types: ['nope'] },
      { secret: 'x' },
    ]) {
      const res = await live.patch(`/v1/webhooks/endpoints/${ep.id}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await live.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data).toMatchObject({
      url: 'https://example.com/live',
      status: 'enabled',
    });
    expect((await live.patch('/v1/webhooks/endpoints/not-a-uuid', {})).status).toBe(400);
  });

  it('deletes: then 404 everywhere, and it is gone from the list', async () => {
    const ep = (await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/d' })).body.data;
    const res = await api.delete(`/v1/webhooks/endpoints/${ep.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: ep.id, deleted: true });
    expect((await api.get(`/v1/webhooks/endpoints/${ep.id}`)).status).toBe(404);
    expect((await api.delete(`/v1/webhooks/endpoints/${ep.id}`)).status).toBe(404);
    expect((await api.patch(`/v1/webhooks/endpoints/${ep.id}`, { status: 'enabled' })).status).toBe(404);
    expect((await api.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`, {})).status).toBe(404);
    const list = await api.get('/v1/webhooks/endpoints?items_per_page=100');
    expect(list.body.data.items.map((e: any) => e.id)).not.toContain(ep.id);
  });

  it('answers 404 not_found for another business or environment, and for unknown ids', async () => {
    const ep = (await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/mine' })).body.data;
    for (const c of [other, live]) {
      expect((await c.get(`/v1/webhooks/endpoints/${ep.id}`)).body.error.code).toBe('not_found');
      expect((await c.patch(`/v1/webhooks/endpoints/${ep.id}`, { status: 'disabled' })).status).toBe(404);
      expect((await c.delete(`/v1/webhooks/endpoints/${ep.id}`)).status).toBe(404);
      expect((await c.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`, {})).status).toBe(404);
      expect((await c.get(`/v1/webhooks/endpoints/${ep.id}/attempts`)).status).toBe(404);
      const list = await c.get('/v1/webhooks/endpoints?items_per_page=100');
      expect(list.body.data.items.map((e: any) => e.id)).not.toContain(ep.id);
    }
    expect((await api.get(`/v1/webhooks/endpoints/${ep.id}`)).body.data.status).toBe('enabled');
    expect((await api.get(`/v1/webhooks/endpoints/${newId()}`)).status).toBe(404);
  });
});

describe('POST /v1/webhooks/endpoints/{id}/rotate-secret', () => {
  it('returns a new secret; the old one keeps an overlap', async () => {
    const ep = (await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/r' })).body.data;
    const res = await api.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`, { expire_old_in_seconds: 3600 });
    expect(res.status).toBe(200);
    expect(res.body.data.secret).toMatch(SECRET_RE);
    expect(res.body.data.secret).not.toBe(ep.secret);
    const expires = Date.parse(res.body.data.previous_secret_expires_at);
    expect(expires - Date.now()).toBeGreaterThan(3500_000);
    const noBody = await api.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`);
    expect(noBody.status).toBe(200);
    const now = await api.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`, { expire_old_in_seconds: 0 });
    expect(now.body.data.previous_secret_expires_at).toBeNull();
  });

  it('validates expire_old_in_seconds', async () => {
    const ep = (await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/r2' })).body.data;
    for (const body of [
      { expire_old_in_seconds: -1 },
      { expire_old_in_seconds: 8 * 86400 },
      { expire_old_in_seconds: 1.5 },
      { other: 1 },
    ]) {
      const res = await api.post(`/v1/webhooks/endpoints/${ep.id}/rotate-secret`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });
});

describe('history routes without deliveries', () => {
  it('validates filters and ids', async () => {
    expect((await api.get('/v1/webhooks/history')).status).toBe(200);
    expect((await api.get('/v1/webhooks/history?status=done')).status).toBe(400);
    expect((await api.get('/v1/webhooks/history?event_type=customer.deleted')).status).toBe(400);
    expect((await api.get('/v1/webhooks/history?start_date=yesterday')).status).toBe(400);
    expect((await api.get('/v1/webhooks/history?start_date=2024-02-01&end_date=2024-01-01')).status).toBe(400);
    expect((await api.get('/v1/webhooks/history?limit=101')).status).toBe(400);
    expect((await api.get('/v1/webhooks/event/123')).status).toBe(400);
    expect((await api.get(`/v1/webhooks/event/${newId()}`)).status).toBe(404);
    expect((await api.get(`/v1/webhooks/calls/${newId()}`)).status).toBe(404);
    const send = await api.post(`/v1/webhooks/event/send/${newId()}`);
    expect(send.status).toBe(404);
    expect(send.body.error.code).toBe('not_found');
  });

  it('records customer.created in the outbox for the API-created customer', async () => {
    const res = await api.post('/v1/customers', johnDoe());
    expect(res.status).toBe(200);
    const ev = await t.db.selectFrom('events').selectAll().where('event_group_id', '=', res.body.data.id).execute();
    expect(ev.map((e) => e.event_type)).toEqual(['customer.created']);
  });
});
