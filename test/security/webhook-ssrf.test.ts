import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, webhookLoopbackAllowed } from '../../src/config.js';
import { runWebhookTick, type DeliveryOptions } from '../../src/modules/webhooks/delivery.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { startReceiver, until } from '../webhooks/receiver.js';

/**
 * Anyone who signs up gets sandbox keys: sandbox webhooks must not make this server a probe of
 * the private networks around it, nor read out what answers there.
 */
let t: TestApp;
let sandbox: Client;
let live: Client;

beforeAll(async () => {
  // As a server others reach is configured: the loopback setting off.
  t = await startTestApp({ WEBHOOK_SANDBOX_LOOPBACK: false });
  const biz = await t.tenant('Ssrf Co');
  sandbox = clientFor(t, biz.sandbox.secret_key);
  live = clientFor(t, biz.live.secret_key);
});
afterAll(() => t.close());

const PRIVATE = [
  'http://10.0.0.1/x',
  'http://10.255.1.2:8080/x',
  'http://192.168.1.1/x',
  'http://172.16.0.1/x',
  'http://172.31.255.1/x',
  'http://100.64.0.1/x',
  'http://0.0.0.0/x',
  'http://0.0.0.0:5432/x',
  'http://[::1]/x',
  'http://127.1/x',
  'http://2130706433/x',
  'http://0x7f000001/x',
  'http://0177.0.0.1/x',
  'http://[::ffff:7f00:1]/x',
  'http://[::ffff:127.0.0.1]/x',
  'http://[::127.0.0.1]/x',
  'http://[::a00:1]/x',
  'http://127.0.0.1:5432/x',
  'http://169.254.169.254/latest/meta-data',
  'http://[fe80::1]/x',
  'http://[fc00::1]/x',
  'http://localhost/x',
  'http://localhost./x',
  'http://db.localhost/x',
  'http://printer.local/x',
  'http://metadata.google.internal/x',
  'http://postgres:5432/x',
];

describe('registration', () => {
  it('refuses private, reserved and loopback targets in sandbox', async () => {
    for (const url of PRIVATE) {
      const res = await sandbox.post('/v1/webhooks/endpoints', { url });
      expect(res.status, url).toBe(400);
      expect(res.body.error.code, url).toBe('validation_failed');
      expect(res.body.error.details[0].field).toBe('url');
    }
    expect((await sandbox.post('/v1/webhooks/endpoints', { url: 'http://hooks.example.com/x' })).status).toBe(201);
  });

  it('refuses them in live too, with IPv4-compatible addresses and names ending in a dot', async () => {
    for (const url of [
      ...PRIVATE.map((u) => u.replace('http:', 'https:')),
      'https://hooks.example.com./x',
      'https://[::]/x',
      'https://[::8.8.8.8]/x',
    ]) {
      const res = await live.post('/v1/webhooks/endpoints', { url });
      expect(res.status, url).toBe(400);
    }
    expect((await live.post('/v1/webhooks/endpoints', { url: 'https://hooks.example.com/x' })).status).toBe(201);
  });

  it('refuses them when an endpoint is changed to point there', async () => {
    const ep = (await sandbox.post('/v1/webhooks/endpoints', { url: 'http://hooks.example.com/y' })).body.data;
    const res = await sandbox.patch(`/v1/webhooks/endpoints/${ep.id}`, { url: 'http://127.0.0.1:5432/' });
    expect(res.status).toBe(400);
  });
});

describe('the loopback setting', () => {
  it('takes effect only on a loopback-only server outside production', () => {
    const base = loadConfig({}, { WEBHOOK_SANDBOX_LOOPBACK: true });
    expect(webhookLoopbackAllowed(base)).toBe(true);
    expect(webhookLoopbackAllowed({ ...base, HOST: '::1' })).toBe(true);
    expect(webhookLoopbackAllowed({ ...base, HOST: 'localhost' })).toBe(true);
    expect(webhookLoopbackAllowed({ ...base, HOST: '0.0.0.0' })).toBe(false);
    expect(webhookLoopbackAllowed({ ...base, HOST: '10.0.0.4' })).toBe(false);
    expect(webhookLoopbackAllowed({ ...base, PROFILE: 'production' })).toBe(false);
    expect(webhookLoopbackAllowed({ ...base, WEBHOOK_SANDBOX_LOOPBACK: false })).toBe(false);
    expect(loadConfig({}).WEBHOOK_SANDBOX_LOOPBACK).toBe(true);
    expect(webhookLoopbackAllowed(loadConfig({}))).toBe(true);
    expect(webhookLoopbackAllowed(loadConfig({ HOST: '0.0.0.0' }))).toBe(false);
  });

  it('on a server listening on all interfaces, sandbox loopback stays refused', async () => {
    const open = await startTestApp({ WEBHOOK_SANDBOX_LOOPBACK: true, HOST: '0.0.0.0' });
    try {
      const api = clientFor(open, (await open.tenant('Open Co')).sandbox.secret_key);
      expect((await api.post('/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/x' })).status).toBe(400);
      expect((await api.post('/v1/webhooks/endpoints', { url: 'http://localhost:9/x' })).status).toBe(400);
      // Loopback only: private networks stay refused with the setting on.
      const dev = clientFor(t, (await t.tenant('Dev Co')).sandbox.secret_key);
      expect((await dev.post('/v1/webhooks/endpoints', { url: 'http://10.0.0.1/x' })).status).toBe(400);
    } finally {
      await open.close();
    }
  });
});

describe('delivery', () => {
  const FAST: Partial<DeliveryOptions> = { retryDelaysMs: [3_600_000], jitter: 0, timeoutMs: 5000 };

  async function attemptsOf(api: Client, endpointId: string) {
    return (await api.get(`/v1/webhooks/endpoints/${endpointId}/attempts`)).body.data.items as any[];
  }

  it.each(['10.0.0.1', '127.0.0.1', '::ffff:192.168.0.1'])(
    'resolves the name again when it sends, and refuses an answer of %s (DNS rebinding)',
    async (address) => {
      const biz = await t.tenant('Rebind Co');
      const api = clientFor(t, biz.sandbox.secret_key);
      const rx = await startReceiver(() => ({ status: 200, headers: { 'x-inside': 'secret-banner' }, body: 'internal data' }));
      try {
        const ep = (await api.post('/v1/webhooks/endpoints', { url: `http://rebind.example.test:${rx.port}/hook` })).body.data;
        await api.post('/v1/customers', johnDoe());
        const resolver = async () => [{ address, family: address.includes(':') ? 6 : 4 }];
        await until(
          async () => (await attemptsOf(api, ep.id)).length >= 1,
          () => runWebhookTick({ db: t.db, sealer: t.sealer }, { ...FAST, resolver }),
        );
        const [attempt] = await attemptsOf(api, ep.id);
        expect(attempt.error).toMatch(/^refused: rebind\.example\.test resolves to a private/);
        expect(attempt.status_code).toBeNull();
        expect(rx.received).toHaveLength(0);
      } finally {
        await rx.close();
      }
    },
  );

  it('with loopback allowed, keeps only the status of a loopback answer, never its headers or body', async () => {
    const biz = await t.tenant('Loopback Co');
    const api = clientFor(t, biz.sandbox.secret_key);
    const rx = await startReceiver(() => ({ status: 200, headers: { 'x-inside': 'secret-banner' }, body: '{"internal":"data"}' }));
    try {
      // Registered under a name (the setting is off on this server), resolved to loopback when sent.
      const ep = (await api.post('/v1/webhooks/endpoints', { url: `http://dev.example.test:${rx.port}/hook` })).body.data;
      await api.post('/v1/customers', johnDoe());
      const resolver = async () => [{ address: '127.0.0.1', family: 4 }];
      await until(
        () => rx.received.length >= 1,
        () => runWebhookTick({ db: t.db, sealer: t.sealer }, { ...FAST, resolver, allowLoopback: true }),
      );
      await until(
        async () => (await attemptsOf(api, ep.id)).length >= 1,
        async () => undefined,
      );
      const [attempt] = await attemptsOf(api, ep.id);
      expect(attempt.status_code).toBe(200);
      expect(attempt.response_headers).toBeNull();
      expect(attempt.response_body).toBeNull();
      const stored = await t.db
        .selectFrom('webhook_attempts')
        .select(['response_headers', 'response_excerpt'])
        .where('endpoint_id', '=', ep.id)
        .execute();
      expect(stored).toEqual([{ response_headers: null, response_excerpt: null }]);
    } finally {
      await rx.close();
    }
  });
});
