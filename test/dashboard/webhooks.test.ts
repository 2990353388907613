import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/** The dashboard's webhooks page over plain HTTP: endpoint management through the webhooks service. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

async function signedUp() {
  const agent = new Agent(t);
  await agent.signup(`hooks+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  const key = agent.textOf('new-secret-sandbox')!;
  await agent.get('/dashboard/webhooks');
  return { agent, api: clientFor(t, key) };
}

describe('webhooks page', () => {
  it('generates an endpoint and shows its secret exactly once', async () => {
    const { agent, api } = await signedUp();
    const res = await agent.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/hook', event_types: 'customer.created' });
    expect(res.statusCode).toBe(303);
    await agent.get('/dashboard/webhooks');
    const secret = agent.textOf('webhook-secret')!;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(agent.lastHtml).toContain('http://127.0.0.1:9/hook');
    expect(agent.lastHtml).toContain('customer.created');
    const again = await agent.get('/dashboard/webhooks');
    expect(again.body).not.toContain(secret);

    const listed = await api.get('/v1/webhooks/endpoints');
    if (listed.status === 200) expect(listed.body.data.items.map((e: { url: string }) => e.url)).toContain('http://127.0.0.1:9/hook');
  });

  it('shows a bad URL as a message on the page and creates nothing', async () => {
    const { agent } = await signedUp();
    const res = await agent.post('/dashboard/webhooks', { url: 'not a url' });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('not a valid absolute URL');
    expect(res.body).toContain('No endpoints yet');
  });

  it('disables, enables, rotates, edits event types and deletes', async () => {
    const { agent } = await signedUp();
    await agent.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/a' });
    await agent.get('/dashboard/webhooks');
    const first = agent.textOf('webhook-secret')!;
    const id = /\/dashboard\/webhooks\/endpoints\/([0-9a-f-]{36})\/status/.exec(agent.lastHtml)![1]!;
    expect(agent.lastHtml).toContain('All events');

    expect((await agent.post(`/dashboard/webhooks/endpoints/${id}/status`, { status: 'disabled' })).statusCode).toBe(303);
    expect((await agent.get('/dashboard/webhooks')).body).toContain('badge-disabled');
    await agent.post(`/dashboard/webhooks/endpoints/${id}/status`, { status: 'enabled' });
    expect((await agent.get('/dashboard/webhooks')).body).toContain('badge-enabled');

    await agent.post(`/dashboard/webhooks/endpoints/${id}/rotate`, { expire_old_in_seconds: '0' });
    await agent.get('/dashboard/webhooks');
    const second = agent.textOf('webhook-secret')!;
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);

    await agent.get(`/dashboard/webhooks/endpoints/${id}`);
    await agent.post(`/dashboard/webhooks/endpoints/${id}`, { url: 'http://127.0.0.1:9/b', event_types: 'transfer.status.completed' });
    const page = await agent.get('/dashboard/webhooks');
    expect(page.body).toContain('http://127.0.0.1:9/b');
    expect(page.body).toContain('transfer.status.completed');

    await agent.post(`/dashboard/webhooks/endpoints/${id}/delete`);
    expect((await agent.get('/dashboard/webhooks')).body).toContain('No endpoints yet');
  });

  it('keeps endpoints to their environment and business (404 for others)', async () => {
    const a = await signedUp();
    const b = await signedUp();
    await a.agent.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/a' });
    await a.agent.get('/dashboard/webhooks');
    const id = /\/dashboard\/webhooks\/endpoints\/([0-9a-f-]{36})\/status/.exec(a.agent.lastHtml)![1]!;
    expect((await b.agent.get(`/dashboard/webhooks/endpoints/${id}`)).statusCode).toBe(404);
    const other = await b.agent.post(`/dashboard/webhooks/endpoints/${id}/status`, { status: 'disabled' });
    expect(other.statusCode).toBe(404);
    await a.agent.post('/dashboard/environment', { environment: 'live', back: 'webhooks' });
    const live = await a.agent.get('/dashboard/webhooks');
    expect(live.body).toContain('No endpoints yet');
    expect((await a.agent.get(`/dashboard/webhooks/endpoints/${id}`)).statusCode).toBe(404);
    expect((await a.agent.get('/dashboard/webhooks/endpoints/not-an-id')).statusCode).toBe(404);
    expect((await a.agent.get(`/dashboard/webhooks/deliveries/${newId()}`)).statusCode).toBe(404);
    const resend = await a.agent.post(`/dashboard/webhooks/deliveries/${newId()}/resend`);
    expect(resend.statusCode).toBe(404);
  });

  it('filters deliveries and rejects a bad filter on the page', async () => {
    const { agent } = await signedUp();
    const ok = await agent.get('/dashboard/webhooks?status=failed');
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('No deliveries match');
    const bad = await agent.get('/dashboard/webhooks?status=nonsense');
    expect(bad.body).toContain('Invalid filter');
  });
});
