import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../harness.js';

/**
 * A path the router decodes or normalises to a /v1 route must meet the same authentication as
 * the plain path: every registered /v1 route, tried with every way of spelling its path
 * differently, without a key, never answers 2xx (it reached the handler) nor 5xx (a handler ran
 * without a business), and the server keeps answering.
 */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
  await t.tenant('Encoded Co');
});
afterAll(() => t.close());

function concrete(url: string): string {
  return url.replace(/:[a-z_]+/g, newId());
}

/** Spellings of `/v1/<rest>` that a router may take for the same route. */
function spellings(path: string): string[] {
  const rest = path.slice('/v1/'.length);
  return [
    `/%761/${rest}`,
    `/%76%31/${rest}`,
    `/%56%31/${rest}`,
    `/v%31/${rest}`,
    `/v1%2F${rest}`,
    `/v1%2f${rest}`,
    `/%2576%31/${rest}`,
    `//v1/${rest}`,
    `///v1/${rest}`,
    `/./v1/${rest}`,
    `/v1/../v1/${rest}`,
    `/v1/./${rest}`,
    `/V1/${rest}`,
    `/v1/${rest}%00`,
    `/%761/${rest}%00`,
    `/%761/${rest}/`,
    `/%761/${rest}?x=1`,
  ];
}

function apiRoutes() {
  return t.app.apiRoutes.filter((r) => r.url.startsWith('/v1/') && !r.noAuth);
}

describe('encoded and irregular paths', () => {
  it('never reach a /v1 handler without a key, never answer 5xx', async () => {
    const routes = apiRoutes();
    expect(routes.length).toBeGreaterThan(20);
    const leaks: string[] = [];
    for (const r of routes) {
      for (const url of spellings(concrete(r.url))) {
        const headers: Record<string, string> = { 'idempotency-key': newId() };
        const withBody = r.method !== 'GET' && r.method !== 'DELETE';
        if (withBody) headers['content-type'] = 'application/json';
        const res = await t.app.inject({ method: r.method as 'GET', url, headers, ...(withBody ? { payload: '{}' } : {}) });
        if (res.statusCode < 300 || res.statusCode >= 500) leaks.push(`${r.method} ${url} → ${res.statusCode}`);
      }
    }
    expect(leaks).toEqual([]);
  });

  it('the plain paths still ask for a key', async () => {
    for (const r of apiRoutes()) {
      const res = await t.request(r.method as 'GET', concrete(r.url), r.method === 'GET' ? undefined : {}, { key: null });
      expect(res.status, `${r.method} ${r.url}`).toBe(401);
    }
  });
});

/** One request with the path sent byte for byte as given (no client-side normalisation). */
function rawGet(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('on a real socket', () => {
  it('an encoded path to the batched account read answers 401 and the server stays up', async () => {
    const s = await startTestApp();
    try {
      await s.app.listen({ host: '127.0.0.1', port: 0 });
      const port = (s.app.server.address() as AddressInfo).port;
      const id = newId();
      for (const path of [`/%761/accounts/${id}`, `/%76%31/accounts/${id}`, `//v1/accounts/${id}`, `/v1%2Faccounts/${id}`]) {
        const status = await rawGet(port, path);
        expect(status, path).toBeGreaterThanOrEqual(400);
        expect(status, path).toBeLessThan(500);
      }
      await new Promise((r) => setTimeout(r, 50));
      expect(await rawGet(port, `/v1/accounts/${id}`)).toBe(401);
    } finally {
      await s.close();
    }
  });
});

describe('the production HTTPS rule', () => {
  it('holds for every spelling of a /v1 path', async () => {
    const p = await startTestApp({ PROFILE: 'production', SECRETS_KEY: randomBytes(32).toString('base64') });
    try {
      const { sandbox } = await p.tenant('Plain Http Co');
      for (const url of ['/v1/customers', ...spellings('/v1/customers')]) {
        const res = await p.app.inject({ method: 'GET', url, headers: { 'api-key': sandbox.secret_key } });
        // A spelling no route matched (404), or a path the router refuses (400).
        if (res.statusCode === 404 || res.statusCode === 400) continue;
        expect(res.statusCode, url).toBe(403);
        expect(JSON.parse(res.body).error.code, url).toBe('https_required');
      }
    } finally {
      await p.close();
    }
  });
});
