import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../harness.js';

/** The pages before sign-in say which product they belong to, and every page has an icon. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('dashboard public pages', () => {
  it('log in and sign up carry the product name and the icon', async () => {
    for (const url of ['/dashboard/login', '/dashboard/signup']) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.body).toContain('<p class="product-name">Financial Services API</p>');
      expect(res.body).toMatch(/<title>[^<]*Financial Services API[^<]*<\/title>/);
      expect(res.body).toContain('<link rel="icon" href="/favicon.ico"');
    }
  });
});
