import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../harness.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';

/**
 * The shared security suite: every /v1 route the app registers, found automatically, so a new
 * route joins without anyone remembering to add it. Per-resource isolation (another business's
 * or environment's id → 404) is tested in each module's own tests with real resources.
 */
let t: TestApp;
let biz: CreatedTenant;
let other: CreatedTenant;

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant('Security Co');
  other = await t.tenant('Other Co');
});
afterAll(() => t.close());

function concrete(url: string): string {
  return url.replace(/:[a-z_]+/g, newId());
}

function v1Routes() {
  return t.app.apiRoutes.filter((r) => r.url.startsWith('/v1/') && !r.noAuth);
}

describe('every /v1 route', () => {
  it('has routes to check', () => {
    expect(v1Routes().length).toBeGreaterThan(3);
  });

  it('answers 401 missing_api_key without a key', async () => {
    for (const r of v1Routes()) {
      const res = await t.request(r.method as 'GET', concrete(r.url), r.method === 'GET' ? undefined : {}, { key: null });
      expect(res.status, `${r.method} ${r.url}`).toBe(401);
      expect(res.body.error.code).toBe('missing_api_key');
      expect(res.body.data).toBeNull();
      expect(res.body.error.request_id).toBe(res.headers['x-request-id']);
    }
  });

  it('answers 401 invalid_api_key for an unknown or malformed key, never saying whether a business exists', async () => {
    // A real key with its last character changed (to one it does not already end in).
    const last = biz.sandbox.secret_key.slice(-1) === 'Q' ? 'R' : 'Q';
    const bad = ['sk_sandbox_' + 'x'.repeat(43), 'nonsense', biz.sandbox.secret_key.slice(0, -1) + last];
    for (const r of v1Routes()) {
      for (const key of bad) {
        const res = await t.request(r.method as 'GET', concrete(r.url), r.method === 'GET' ? undefined : {}, { key });
        expect(res.status, `${r.method} ${r.url}`).toBe(401);
        expect(res.body.error.code).toBe('invalid_api_key');
      }
    }
  });

  it('answers 403 secret_key_required for a public key except on reference data', async () => {
    for (const r of v1Routes()) {
      const res = await t.request(r.method as 'GET', concrete(r.url), r.method === 'GET' ? undefined : {}, {
        key: biz.sandbox.public_key,
      });
      if (r.publicKeyAllowed) {
        expect(res.status, `${r.method} ${r.url}`).not.toBe(403);
      } else {
        expect(res.status, `${r.method} ${r.url}`).toBe(403);
        expect(res.body.error.code).toBe('secret_key_required');
      }
    }
  });

  it('answers 403 tenant_mismatch when x-tenant-id names another business', async () => {
    for (const r of v1Routes()) {
      const res = await t.request(r.method as 'GET', concrete(r.url), r.method === 'GET' ? undefined : {}, {
        key: biz.sandbox.secret_key,
        headers: { 'x-tenant-id': other.tenant_id },
      });
      expect(res.status, `${r.method} ${r.url}`).toBe(403);
      expect(res.body.error.code).toBe('tenant_mismatch');
    }
  });

  it('accepts the matching x-tenant-id', async () => {
    const res = await t.request('GET', '/v1/customers', undefined, {
      key: biz.sandbox.secret_key,
      headers: { 'x-tenant-id': biz.tenant_id },
    });
    expect(res.status).toBe(200);
  });

  it('needs an Idempotency-Key on every POST', async () => {
    for (const r of v1Routes().filter((x) => x.method === 'POST')) {
      const res = await t.request('POST', concrete(r.url), {}, { key: biz.sandbox.secret_key, idempotencyKey: null });
      if (r.publicKeyAllowed) continue;
      expect(res.status, `${r.method} ${r.url}`).toBe(400);
      expect(res.body.error.code).toBe('missing_idempotency_key');
    }
  });
});
