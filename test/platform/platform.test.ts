import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotateKeys, setSettings, type CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';

let t: TestApp;
let biz: CreatedTenant;

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant();
});
afterAll(() => t.close());

describe('keys and environments', () => {
  it('keeps sandbox and live data apart', async () => {
    const sandbox = clientFor(t, biz.sandbox.secret_key);
    const live = clientFor(t, biz.live.secret_key);
    await sandbox.post('/v1/customers', johnDoe());
    expect((await sandbox.get('/v1/customers')).body.data.total_items).toBe(1);
    expect((await live.get('/v1/customers')).body.data.total_items).toBe(0);
  });

  it('keys have the contract shape', () => {
    expect(biz.sandbox.secret_key).toMatch(/^sk_sandbox_[0-9A-Za-z]{43}$/);
    expect(biz.sandbox.public_key).toMatch(/^pk_sandbox_[0-9A-Za-z]{43}$/);
    expect(biz.live.secret_key).toMatch(/^sk_live_[0-9A-Za-z]{43}$/);
  });

  it('stores only hashes of keys', async () => {
    const rows = await t.db.selectFrom('api_keys').selectAll().where('tenant_id', '=', biz.tenant_id).execute();
    expect(rows).toHaveLength(4);
    for (const row of rows) {
      expect(JSON.stringify(row)).not.toContain(biz.sandbox.secret_key.slice(11));
      expect(row.key_hash).toHaveLength(32);
    }
  });

  it('rotation: the old pair works until its expiry, then 401 expired_api_key', async () => {
    const own = await t.tenant();
    const later = await t.db.transaction().execute((trx) => rotateKeys(trx, own.tenant_id, 'sandbox', 3600));
    expect((await clientFor(t, own.sandbox.secret_key).get('/v1/customers')).status).toBe(200);
    expect((await clientFor(t, later.secret_key).get('/v1/customers')).status).toBe(200);
    const now = await t.db.transaction().execute((trx) => rotateKeys(trx, own.tenant_id, 'sandbox', 0));
    await new Promise((r) => setTimeout(r, 2100)); // the auth cache holds a lookup for 2 s
    for (const key of [own.sandbox.secret_key, later.secret_key, own.sandbox.public_key]) {
      const res = await t.request('GET', '/v1/customers', undefined, { key });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('expired_api_key');
    }
    expect((await clientFor(t, now.secret_key).get('/v1/customers')).status).toBe(200);
    // the live pair was not touched
    expect((await clientFor(t, own.live.secret_key).get('/v1/customers')).status).toBe(200);
  });
});

describe('rate limiting', () => {
  it('answers 429 with Retry-After and RateLimit headers past the quota', async () => {
    const own = await t.tenant();
    await setSettings(t.db, own.tenant_id, { rate_limit_per_minute: 3 });
    const api = clientFor(t, own.sandbox.secret_key);
    const first = await api.get('/v1/customers');
    expect(first.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
    expect(first.headers['ratelimit']).toMatch(/^"default";r=2;t=\d+$/);
    await api.get('/v1/customers');
    await api.get('/v1/customers');
    const limited = await api.get('/v1/customers');
    if (limited.status !== 429) {
      // the one-minute window turned over between the calls; one more round is within it
      for (let i = 0; i < 3; i++) await api.get('/v1/customers');
    }
    const res = limited.status === 429 ? limited : await api.get('/v1/customers');
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    // other businesses are not affected
    expect((await clientFor(t, biz.sandbox.secret_key).get('/v1/customers')).status).toBe(200);
  });
});

describe('transport and documentation', () => {
  it('echoes a sane X-Request-Id and replaces an insane one', async () => {
    const api = clientFor(t, biz.sandbox.secret_key);
    const echoed = await api.get('/v1/customers', { headers: { 'x-request-id': 'req-123_abc' } });
    expect(echoed.headers['x-request-id']).toBe('req-123_abc');
    const replaced = await api.get('/v1/customers', { headers: { 'x-request-id': 'bad id <script>' } });
    expect(replaced.headers['x-request-id']).not.toBe('bad id <script>');
  });

  it('answers unknown routes with the envelope 404', async () => {
    const res = await t.request('GET', '/v1/nothing-here', undefined, { key: biz.sandbox.secret_key });
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ data: null, error: { code: 'not_found' } });
  });

  it('serves OpenAPI 3.1 generated from the route schemas, and the docs page', async () => {
    const res = await t.request('GET', '/v1/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/v1/customers'].post.requestBody).toBeDefined();
    expect(res.body.components.securitySchemes.ApiKeyAuth).toMatchObject({ in: 'header', name: 'Api-Key' });
    const docs = await t.request('GET', '/docs/');
    expect(docs.status).toBe(200);
    expect(docs.text).toContain('<html');
    expect(docs.text).not.toMatch(/https?:\/\/(cdn|unpkg|jsdelivr)/);
  });

  it("documents the error envelope of every /v1 operation, its codes closed per status, or only the route's declared codes", async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const transfer = doc.paths['/v1/transfer'].post.responses;
    for (const status of ['400', '401', '403', '404', '409', '413', '415', '422', '429', '500', '503']) {
      expect(transfer[status], status).toBeDefined();
    }
    const codes422 = transfer['422'].content['application/json'].schema.properties.error.properties.code.enum;
    expect(codes422).toEqual(expect.arrayContaining(['insufficient_funds', 'idempotency_key_reused', 'limit_exceeded']));
    expect(codes422).not.toContain('not_found');
    for (const [path, operations] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(operations)) {
        expect(op.responses['400'], `${method} ${path}`).toBeDefined();
        expect(op.responses['500'], `${method} ${path}`).toBeDefined();
      }
    }
  });

  it('serves health, readiness and Prometheus metrics', async () => {
    expect((await t.request('GET', '/healthz')).body).toEqual({ status: 'ok' });
    expect((await t.request('GET', '/readyz')).body).toEqual({ status: 'ready' });
    const metrics = await t.request('GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain('http_request_duration_seconds');
  });
});

describe('production profile', () => {
  it('refuses plain HTTP unless a trusted proxy forwarded HTTPS', async () => {
    const prod = await startTestApp({
      PROFILE: 'production',
      SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      TRUSTED_PROXIES: ['10.0.0.9'],
    });
    try {
      const own = await prod.tenant();
      const plain = await prod.request('GET', '/v1/customers', undefined, { key: own.sandbox.secret_key });
      expect(plain.status).toBe(403);
      expect(plain.body.error.code).toBe('https_required');
      const spoofed = await prod.request('GET', '/v1/customers', undefined, {
        key: own.sandbox.secret_key,
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(spoofed.status).toBe(403); // loopback is not a trusted proxy
      const viaProxy = await prod.app.inject({
        method: 'GET',
        url: '/v1/customers',
        headers: { 'api-key': own.sandbox.secret_key, 'x-forwarded-proto': 'https' },
        remoteAddress: '10.0.0.9',
      });
      expect(viaProxy.statusCode).toBe(200);
    } finally {
      await prod.close();
    }
  });
});
