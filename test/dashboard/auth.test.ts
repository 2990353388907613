import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, EmailTaken } from '../../src/dashboard/service.js';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';

/**
 * The dashboard's auth rules over plain HTTP (inject): sessions, cookie flags, CSRF, the login
 * rate limit, redirects, escaping and environment isolation. 127.0.0.1 (inject's address) is a
 * trusted proxy here, so `X-Forwarded-Proto: https` plays a TLS request.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ TRUSTED_PROXIES: ['127.0.0.1'] });
});
afterAll(() => t.close());

const email = () => `owner+${newId().slice(-12)}@example.com`;

describe('signed-out access', () => {
  it('redirects every page to the login page', async () => {
    const agent = new Agent(t);
    for (const path of ['/dashboard', '/dashboard/business', '/dashboard/keys', '/dashboard/webhooks', '/dashboard/customers']) {
      const res = await agent.get(path);
      expect(res.statusCode, path).toBe(303);
      expect(res.headers.location).toBe('/dashboard/login');
    }
    const post = await agent.post('/dashboard/keys/rotate', { expire_in_seconds: '0', _csrf: 'x' });
    expect(post.statusCode).toBe(303);
    expect(post.headers.location).toBe('/dashboard/login');
  });

  it('serves the login page with security headers and a Strict pre-login CSRF cookie', async () => {
    const agent = new Agent(t);
    const res = await agent.get('/dashboard/login');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/^fsd_csrf=[\w-]{43}; Path=\/; Max-Age=3600; HttpOnly; SameSite=Strict$/);
    expect(agent.csrf()).toBe(agent.cookies.get('fsd_csrf'));
  });
});

describe('sign up', () => {
  it('creates the business, sets a session cookie and shows both secret keys exactly once', async () => {
    const agent = new Agent(t);
    const res = await agent.signup(email());
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/dashboard/keys');
    const cookie = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('fsd_session='));
    expect(cookie).toMatch(/^fsd_session=[\w-]{43}; Path=\/; Max-Age=43200; HttpOnly; SameSite=Lax$/);

    await agent.get('/dashboard/keys');
    const sandbox = agent.textOf('new-secret-sandbox')!;
    const live = agent.textOf('new-secret-live')!;
    expect(sandbox).toMatch(/^sk_sandbox_\w{43}$/);
    expect(live).toMatch(/^sk_live_\w{43}$/);
    expect((await clientFor(t, sandbox).get('/v1/customers')).status).toBe(200);
    expect((await clientFor(t, live).get('/v1/customers')).status).toBe(200);

    const again = await agent.get('/dashboard/keys');
    expect(again.body).not.toContain(sandbox);
    expect(again.body).toContain(`sk_sandbox_…${sandbox.slice(-4)}`);
    expect(agent.textOf('public-key')).toMatch(/^pk_sandbox_\w{43}$/);
  });

  it('rejects a short password and a taken email without creating anything', async () => {
    const agent = new Agent(t);
    const short = await agent.signup(email(), 'short');
    expect(short.statusCode).toBe(400);
    expect(short.body).toContain('at least 12 characters');
    const taken = email();
    await new Agent(t).signup(taken);
    const dup = await agent.signup(taken.toUpperCase());
    // Generic: the page does not confirm that the email has a login.
    expect(dup.statusCode).toBe(400);
    expect(dup.body).toContain('could not create an account');
  });

  it('escapes what the business typed', async () => {
    const agent = new Agent(t);
    await agent.signup(email(), 'correct horse battery', '<script>alert(1)</script>');
    const res = await agent.get('/dashboard/business');
    expect(res.body).not.toContain('<script>alert(1)</script>');
    expect(res.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});

describe('CSRF', () => {
  it('refuses state changes without the token, with a wrong one, or from another origin (403)', async () => {
    const agent = new Agent(t);
    await agent.signup(email());
    await agent.get('/dashboard/keys');
    for (const fields of [{ _csrf: null }, { _csrf: 'wrong' }, { _csrf: '' }]) {
      const res = await agent.post('/dashboard/keys/rotate', { expire_in_seconds: '0', ...fields });
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toContain('text/html');
    }
    const crossSite = await agent.post('/dashboard/keys/rotate', { expire_in_seconds: '0' }, { origin: 'https://evil.example' });
    expect(crossSite.statusCode).toBe(403);
    for (const path of ['/dashboard/logout', '/dashboard/environment']) {
      expect((await agent.post(path, { _csrf: 'wrong', environment: 'live' })).statusCode).toBe(403);
    }
    // The session survived and the right token works.
    const ok = await agent.post('/dashboard/keys/rotate', { expire_in_seconds: '0' });
    expect(ok.statusCode).toBe(303);
  });

  it('protects the login and sign-up forms with the double-submit cookie', async () => {
    const agent = new Agent(t);
    await agent.get('/dashboard/login');
    const res = await agent.post('/dashboard/login', { email: email(), password: 'x', _csrf: 'forged' });
    expect(res.statusCode).toBe(403);
    const fresh = new Agent(t);
    const noCookie = await fresh.post('/dashboard/signup', {
      _csrf: 'a'.repeat(43),
      business_name: 'X Co',
      email: email(),
      password: 'p'.repeat(12),
    });
    expect(noCookie.statusCode).toBe(403);
  });

  it('refuses a form token of another session', async () => {
    const a = new Agent(t);
    const b = new Agent(t);
    await a.signup(email());
    await b.signup(email());
    await a.get('/dashboard/business');
    const res = await b.post('/dashboard/environment', { environment: 'live', _csrf: a.csrf()! });
    expect(res.statusCode).toBe(403);
  });
});

describe('log in and out', () => {
  it('accepts the right password only, then logs out for good', async () => {
    const address = email();
    await new Agent(t).signup(address);
    const agent = new Agent(t);
    await agent.get('/dashboard/login');
    const wrong = await agent.post('/dashboard/login', { email: address, password: 'not the password' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).toContain('email or password is not correct');
    const unknown = await agent.post('/dashboard/login', { email: email(), password: 'not the password' });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.body).toBe(wrong.body.replace(address, unknown.body.match(/value="(owner[^"]+)"/)![1]!));

    const ok = await agent.post('/dashboard/login', { email: address.toUpperCase(), password: 'correct horse battery' });
    expect(ok.statusCode).toBe(303);
    expect(ok.headers.location).toBe('/dashboard/overview');
    const stolen = agent.cookies.get('fsd_session')!;
    expect((await agent.get('/dashboard/business')).statusCode).toBe(200);

    const out = await agent.post('/dashboard/logout');
    expect(out.statusCode).toBe(303);
    expect(String(out.headers['set-cookie'])).toContain('Max-Age=0');
    const replay = await t.app.inject({ method: 'GET', url: '/dashboard/business', headers: { cookie: `fsd_session=${stolen}` } });
    expect(replay.statusCode).toBe(303);
    expect(replay.headers.location).toBe('/dashboard/login');
  });

  it('lets an operator add a login to an existing business (CLI dashboard-user create)', async () => {
    const business = await t.tenant('Operator Co');
    const address = email();
    await addUser(t.db, business.tenant_id, { email: address, password: 'operator chosen pass' });
    await expect(addUser(t.db, business.tenant_id, { email: address, password: 'operator chosen pass' })).rejects.toBeInstanceOf(
      EmailTaken,
    );
    await expect(addUser(t.db, newId(), { email: email(), password: 'operator chosen pass' })).rejects.toThrow('No business');
    await expect(addUser(t.db, business.tenant_id, { email: email(), password: 'short' })).rejects.toThrow('password');
    const agent = new Agent(t);
    await agent.get('/dashboard/login');
    expect((await agent.post('/dashboard/login', { email: address, password: 'operator chosen pass' })).statusCode).toBe(303);
    await agent.get('/dashboard/business');
    expect(agent.textOf('tenant-id')).toBe(business.tenant_id);
    const keys = await agent.get('/dashboard/keys');
    expect(keys.body).toContain('created outside the dashboard');
  });

  it('rate-limits failed logins per email (429 with Retry-After), even for the right password', async () => {
    const address = email();
    await new Agent(t).signup(address);
    const agent = new Agent(t, { 'x-forwarded-for': '198.51.100.7' });
    await agent.get('/dashboard/login');
    for (let i = 0; i < 5; i++)
      expect((await agent.post('/dashboard/login', { email: address, password: 'wrong password' })).statusCode).toBe(401);
    const blocked = await agent.post('/dashboard/login', { email: address, password: 'correct horse battery' });
    expect(blocked.statusCode).toBe(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect(blocked.body).toContain('Too many failed attempts');
  });

  it('rate-limits failed logins per client address', async () => {
    const agent = new Agent(t, { 'x-forwarded-for': '198.51.100.99' });
    await agent.get('/dashboard/login');
    for (let i = 0; i < 20; i++) await agent.post('/dashboard/login', { email: email(), password: 'wrong password' });
    const blocked = await agent.post('/dashboard/login', { email: email(), password: 'wrong password' });
    expect(blocked.statusCode).toBe(429);
    const elsewhere = new Agent(t, { 'x-forwarded-for': '198.51.100.100' });
    await elsewhere.get('/dashboard/login');
    expect((await elsewhere.post('/dashboard/login', { email: email(), password: 'wrong password' })).statusCode).toBe(401);
  });

  // 30 sign-ups, each creating a business with its keys and hashing a password: slow on a busy machine.
  it('limits sign-ups per client address (30 an hour)', { timeout: 120_000 }, async () => {
    const agent = new Agent(t, { 'x-forwarded-for': '198.51.100.50' });
    for (let i = 0; i < 30; i++) {
      const fresh = new Agent(t, { 'x-forwarded-for': '198.51.100.50' });
      expect((await fresh.signup(email())).statusCode).toBe(303);
    }
    const blocked = await agent.signup(email());
    expect(blocked.statusCode).toBe(429);
    expect(blocked.body).toContain('Too many sign-ups');
  });

  it('marks cookies Secure with the __Host- prefix over HTTPS', async () => {
    const agent = new Agent(t, { 'x-forwarded-proto': 'https' });
    const page = await agent.get('/dashboard/signup');
    expect(String(page.headers['set-cookie'])).toMatch(
      /^__Host-fsd_csrf=[\w-]{43}; Path=\/; Max-Age=3600; HttpOnly; SameSite=Strict; Secure$/,
    );
    const res = await agent.post('/dashboard/signup', { business_name: 'TLS Co', email: email(), password: 'correct horse battery' });
    expect(res.statusCode).toBe(303);
    const cookie = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('__Host-fsd_session='));
    expect(cookie).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
    // The plain-HTTP cookie name is not honoured on an HTTPS request and vice versa.
    const token = agent.cookies.get('__Host-fsd_session')!;
    const plain = await t.app.inject({
      method: 'GET',
      url: '/dashboard/business',
      headers: { cookie: `fsd_session=${token}`, 'x-forwarded-proto': 'https' },
    });
    expect(plain.statusCode).toBe(303);
  });
});

describe('environments and data', () => {
  it('shows only the selected environment, and keeps the choice in the session', async () => {
    const agent = new Agent(t);
    await agent.signup(email());
    await agent.get('/dashboard/keys');
    const sandboxKey = agent.textOf('new-secret-sandbox')!;
    const liveKey = agent.textOf('new-secret-live')!;
    await clientFor(t, sandboxKey).post('/v1/customers', johnDoe({ first_name: 'Sandy' }));
    await clientFor(t, liveKey).post('/v1/customers', johnDoe({ first_name: 'Livia' }));

    const sandbox = await agent.get('/dashboard/customers');
    expect(sandbox.body).toContain('Sandy Doe');
    expect(sandbox.body).not.toContain('Livia');
    const switched = await agent.post('/dashboard/environment', { environment: 'live', back: 'customers' });
    expect(switched.headers.location).toBe('/dashboard/customers');
    const live = await agent.get('/dashboard/customers');
    expect(live.body).toContain('Livia Doe');
    expect(live.body).not.toContain('Sandy');
    expect(live.body).toContain('aria-pressed="true">Live');
    const keys = await agent.get('/dashboard/keys');
    expect(keys.body).toContain('sk_live_…');
    expect(keys.body).not.toContain('sk_sandbox_');

    const filtered = await agent.get('/dashboard/customers?keyword=nobody');
    expect(filtered.body).toContain('No customers in this environment match');
    const bad = await agent.get('/dashboard/customers?from=yesterday');
    expect(bad.statusCode).toBe(200);
    expect(bad.body).toContain('Invalid filter');
  });

  it('keeps the dashboard out of the API document and the API out of the form parser', async () => {
    const doc = await t.request('GET', '/v1/openapi.json');
    expect(Object.keys(doc.body.paths).some((p) => p.startsWith('/dashboard'))).toBe(false);
    const key = (await t.tenant()).sandbox.secret_key;
    const res = await t.request('POST', '/v1/customers', 'first_name=John', {
      key,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('answers unknown pages and rotation choices with HTML errors', async () => {
    const agent = new Agent(t);
    await agent.signup(email());
    await agent.get('/dashboard/keys');
    expect((await agent.get('/dashboard/nope')).statusCode).toBe(404);
    const bad = await agent.post('/dashboard/keys/rotate', { expire_in_seconds: '5' });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('text/html');
  });
});
