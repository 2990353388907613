import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { purgeExpiredSessions } from '../../src/dashboard/service.js';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { startTestApp, type TestApp } from '../harness.js';

/** The production profile: the dashboard only over HTTPS (here via a trusted proxy), sessions expire. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ PROFILE: 'production', SECRETS_KEY: randomBytes(32).toString('base64'), TRUSTED_PROXIES: ['127.0.0.1'] });
});
afterAll(() => t.close());

describe('dashboard with the production profile', () => {
  it('refuses plain HTTP and serves HTTPS with Secure __Host- cookies', async () => {
    const plain = await new Agent(t).get('/dashboard/login');
    expect(plain.statusCode).toBe(403);
    expect(plain.body).toContain('HTTPS');
    expect(plain.headers['set-cookie']).toBeUndefined();

    const agent = new Agent(t, { 'x-forwarded-proto': 'https' });
    const res = await agent.signup(`prod+${newId().slice(-12)}@example.com`);
    expect(res.statusCode).toBe(303);
    const cookie = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('__Host-fsd_session='));
    expect(cookie).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
  });

  it('ends a session at its expiry, and the sweep job deletes it', async () => {
    const agent = new Agent(t, { 'x-forwarded-proto': 'https' });
    await agent.signup(`prod+${newId().slice(-12)}@example.com`);
    expect((await agent.get('/dashboard/business')).statusCode).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 12 * 3_600_000 + 1000);
      const expired = await agent.get('/dashboard/business');
      expect(expired.statusCode).toBe(303);
      expect(expired.headers.location).toBe('/dashboard/login');
      expect(await purgeExpiredSessions(t.db)).toBeGreaterThanOrEqual(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
