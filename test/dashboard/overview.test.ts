import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { runWebhookTick } from '../../src/modules/webhooks/delivery.js';
import { Agent } from '../dashboard-agent.js';
import { startReceiver, until, type Receiver } from '../webhooks/receiver.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

/** The overview the dashboard opens on: checklist from real data, balances per currency, SVG charts, range. */
let t: TestApp;
let agent: Agent;
let sandbox: Client;
let live: Client;
let receiver: Receiver | undefined;

const step = (body: string, key: string) => new RegExp(`data-step="${key}" data-done="(true|false)"`).exec(body)?.[1];

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`overview+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  sandbox = clientFor(t, agent.textOf('new-secret-sandbox')!);
  live = clientFor(t, agent.textOf('new-secret-live')!);
});
afterAll(async () => {
  await receiver?.close();
  await t.close();
});

describe('overview', () => {
  it('is where log-in and / land, first in the navigation, with the business page still there', async () => {
    const root = await agent.get('/dashboard');
    expect(root.headers.location).toBe('/dashboard/overview');
    const page = await agent.get('/dashboard/overview');
    expect(page.statusCode).toBe(200);
    const nav = /<nav class="sidebar"[^]*?<\/nav>/.exec(page.body)![0];
    expect(nav.indexOf('/dashboard/overview')).toBeLessThan(nav.indexOf('/dashboard/business'));
    expect(nav).toContain('href="/dashboard/overview" aria-current="page"');
    expect((await agent.get('/dashboard/business')).statusCode).toBe(200);
  });

  it('shows a new business an unticked checklist, no balances and empty charts', async () => {
    const page = await agent.get('/dashboard/overview');
    for (const key of ['request', 'customer', 'webhook', 'delivered', 'liveKeyUsed']) expect(step(page.body, key)).toBe('false');
    expect(page.body).toContain('(0 of 5 done)');
    expect(page.body).toContain('No accounts yet');
    expect(page.body).toContain('No transfers yet');
  });

  it('ticks the checklist from real data: a request, a customer, a webhook endpoint, a live request', async () => {
    expect((await sandbox.post('/v1/customers', johnDoe())).status).toBe(200);
    await agent.get('/dashboard/webhooks');
    expect((await agent.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: 'customer.created' })).statusCode).toBe(
      303,
    );
    await t.app.requestLog!.flush();
    let page = await agent.get('/dashboard/overview');
    expect(step(page.body, 'request')).toBe('true');
    expect(step(page.body, 'customer')).toBe('true');
    expect(step(page.body, 'webhook')).toBe('true');
    expect(step(page.body, 'liveKeyUsed')).toBe('false');
    expect(step(page.body, 'delivered')).toBe('false');
    expect(page.body).toContain('(3 of 5 done)');

    expect((await live.get('/v1/customers')).status).toBe(200);
    await t.app.requestLog!.flush();
    page = await agent.get('/dashboard/overview');
    expect(step(page.body, 'liveKeyUsed')).toBe('true');
    // The live data stays out of the sandbox view, and the live view has its own checklist.
    await agent.post('/dashboard/environment', { environment: 'live', back: 'overview' });
    const livePage = await agent.get('/dashboard/overview');
    expect(step(livePage.body, 'request')).toBe('true');
    expect(step(livePage.body, 'customer')).toBe('false');
    await agent.post('/dashboard/environment', { environment: 'sandbox', back: 'overview' });
  });

  it('ticks "first event delivered" once a webhook reaches its endpoint, and the success chart shows it', async () => {
    receiver = await startReceiver();
    expect((await sandbox.post('/v1/webhooks/endpoints', { url: receiver.url, event_types: ['customer.created'] })).status).toBe(201);
    expect((await sandbox.post('/v1/customers', johnDoe({ first_name: 'Hooked' }))).status).toBe(200);
    const tick = () =>
      runWebhookTick({ db: t.db, sealer: t.sealer }, { retryDelaysMs: [60_000], jitter: 0, timeoutMs: 5000, allowLoopback: true });
    await until(() => receiver!.received.length >= 1, tick);
    await until(async () => step((await agent.get('/dashboard/overview')).body, 'delivered') === 'true', tick);
    const page = await agent.get('/dashboard/overview?range=7');
    const today = new Date().toISOString().slice(0, 10);
    const success = /aria-label="Share of finished webhook deliveries[^]*?<\/svg>/.exec(page.body)![0];
    expect(success).toContain(`<title>${today}: 100 %</title>`);
  });

  it('sums the balances of the accounts per currency, as decimal strings', async () => {
    const a = await sandbox.post('/v1/accounts', { currency: 'USD', label: 'One' });
    const b = await sandbox.post('/v1/accounts', { currency: 'USD', label: 'Two' });
    const c = await sandbox.post('/v1/accounts', { currency: 'EUR', label: 'Euro' });
    for (const r of [a, b, c]) expect(r.status).toBe(200);
    expect((await sandbox.post(`/v1/simulations/accounts/${a.body.data.id}/fund`, { amount: '100.10' })).status).toBe(200);
    expect((await sandbox.post(`/v1/simulations/accounts/${b.body.data.id}/fund`, { amount: '0.20' })).status).toBe(200);
    expect((await sandbox.post(`/v1/simulations/accounts/${c.body.data.id}/fund`, { amount: '5' })).status).toBe(200);
    const transfer = await sandbox.post('/v1/transfers', {
      source: { source_type: 'internal_account', id: a.body.data.id },
      destination: { destination_type: 'internal_account', id: b.body.data.id },
      amount: '40.05',
      description: 'Rent',
    });
    expect(transfer.status).toBe(200);

    const page = await agent.get('/dashboard/overview');
    // 100.10 + 0.20 in USD (the transfer moves money between them, the sum stays), 5 in EUR.
    expect(page.body).toContain('data-balance="USD">100.30<');
    expect(page.body).toContain('data-balance="EUR">5.00<');
    // The recent transfer, newest first, links to its page.
    expect(page.body).toContain(`href="/dashboard/transfers/${transfer.body.data.id}"`);
    expect(page.body).toContain('40.05 USD');
    expect(page.body).toMatch(/href="\/dashboard\/events\/[0-9a-f-]{36}"/);
  });

  it('draws the charts as well-formed SVG that scales to the page, without scripts or inline styles', async () => {
    await t.app.requestLog!.flush();
    const page = await agent.get('/dashboard/overview?range=7');
    const svgs = page.body.match(/<svg[^]*?<\/svg>/g) ?? [];
    // Transfers per day, volume in USD (the only currency transferred), requests, error rate, webhook success.
    expect(svgs).toHaveLength(5);
    for (const svg of svgs) {
      expect(svg).toMatch(/^<svg class="chart" viewBox="0 0 400 180" width="100%"/);
      expect(svg).not.toMatch(/style=|<script|NaN|Infinity/);
      // Every element opened is closed (or self-closed): a small well-formedness check.
      const opened = (svg.match(/<(rect|circle|text|title|svg)[\s>]/g) ?? []).length;
      const closed = (svg.match(/<\/(rect|circle|text|title|svg)>/g) ?? []).length;
      expect(opened).toBe(closed);
    }
    // 7 bars in the transfers chart; today's bar counts this test's transfer and has a height.
    expect(svgs[0]!.match(/<rect /g)).toHaveLength(7);
    const today = new Date().toISOString().slice(0, 10);
    expect(svgs[0]).toContain(`<title>${today}: 1</title>`);
    expect(page.body).toContain(`${today}: 40.05 USD`);
    expect(page.body).toMatch(/<text class="chart-label"[^>]*>\d+<\/text>/);
    expect(page.headers['content-security-policy']).toBeDefined();
  });

  it('offers 7, 30 and 90 days and refuses any other range with a 400 page', async () => {
    for (const range of ['7', '30', '90']) {
      const page = await agent.get(`/dashboard/overview?range=${range}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain(`href="/dashboard/overview?range=${range}" aria-current="true"`);
      expect(page.body).toContain(`last ${range} days`);
      expect((page.body.match(/<svg[^]*?<\/svg>/)![0].match(/<rect /g) ?? []).length).toBe(Number(range));
    }
    expect((await agent.get('/dashboard/overview')).body).toContain('last 30 days');
    // A NUL byte is refused before the page by the server's own guard: still a 400 page.
    expect((await agent.get('/dashboard/overview?range=%00')).statusCode).toBe(400);
    for (const junk of ['1', '365', 'abc', '7.0', '-7', '7&range=30']) {
      const res = await agent.get(`/dashboard/overview?range=${junk}`);
      expect(res.statusCode).toBe(400);
      expect(res.body, junk).toContain('Choose a range of 7, 30, 90 days');
    }
  });
});
