import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { activateFeature, passport } from '../kyc-helpers.js';

/** Events, test events and the detail pages over plain HTTP: content, links and isolation. */
let t: TestApp;
let agent: Agent;
let api: Client;
let customerId: string;
let accountId: string;
let cardId: string;
let transferId: string;

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`detail+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  api = clientFor(t, agent.textOf('new-secret-sandbox')!);
  customerId = (await api.post('/v1/customers', johnDoe({ first_name: 'Detail' }))).body.data.id;
  expect((await api.post('/v1/customers/kyc/upload-document', passport(customerId))).status).toBe(200);
  await activateFeature(api, customerId, 'virtual_cards', {
    annual_remuneration: 12000,
    estimated_monthly_limit: '200.50',
    ip_address: '12.23.31.23',
  });
  accountId = (await api.post('/v1/accounts', { currency: 'USD', label: 'Main', customer_id: customerId })).body.data.id;
  const other = (await api.post('/v1/accounts', { currency: 'USD', label: 'Other', customer_id: customerId })).body.data.id;
  await api.post(`/v1/simulations/accounts/${accountId}/fund`, { amount: '300.00' });
  const transfer = await api.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: accountId },
    destination: { destination_type: 'internal_account', id: other },
    amount: '120.00',
  });
  transferId = transfer.body.data.id;
  const card = await api.post('/v1/cards', {
    customer_id: customerId,
    card_type: 'virtual',
    card_limit: '500.00',
    name_on_card: 'DETAIL DOE',
  });
  expect(card.status, card.text).toBe(200);
  cardId = card.body.data.card?.id ?? card.body.data.id;
  await api.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: accountId },
    destination: { destination_type: 'card', id: cardId },
    amount: '50.00',
  });
  await api.post(`/v1/simulations/cards/${cardId}/authorizations`, { amount: '12.00', merchant_name: 'Corner Shop' });
});
afterAll(() => t.close());

describe('detail pages', () => {
  it('shows a customer with KYC state, documents, features, accounts and cards, every id linked', async () => {
    const page = await agent.get(`/dashboard/customers/${customerId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('KYC state');
    expect(page.body).toContain('passport_front.png');
    expect(page.body).toMatch(/<li><code>virtual_cards<\/code> <span class="badge badge-active">active/);
    expect(page.body).toContain(`href="/dashboard/accounts/${accountId}"`);
    expect(page.body).toContain(`href="/dashboard/cards/${cardId}"`);
  });

  it('shows an account with balances, holds and transactions with a running balance', async () => {
    const page = await agent.get(`/dashboard/accounts/${accountId}`);
    expect(page.body).toContain('Running balance');
    expect(page.body).toContain('Holds (pending)');
    expect(page.body).toContain('130.00'); // 300 - 120 - 50
    expect(page.body).toContain(`href="/dashboard/transfers/${transferId}"`);
    expect(page.body).toContain(`href="/dashboard/customers/${customerId}"`);
  });

  it('shows a transfer with its status timeline from its events', async () => {
    const page = await agent.get(`/dashboard/transfers/${transferId}`);
    expect(page.body).toContain('Status timeline');
    expect(page.body).toMatch(/transfer\.status\.(completed|pending)/);
    expect(page.body).toContain(`href="/dashboard/accounts/${accountId}"`);
  });

  it('shows a card masked, with its controls and authorizations', async () => {
    const page = await agent.get(`/dashboard/cards/${cardId}`);
    expect(page.body).toMatch(/\d{4}[* •]+\d{4}|\*{4}/);
    expect(page.body).toContain('Spending controls');
    expect(page.body).toContain('Corner Shop');
    expect((await agent.get('/dashboard/cards')).body).toContain(`href="/dashboard/cards/${cardId}"`);
  });

  it('answers 404 for ids of another business, another environment or nonsense', async () => {
    const other = new Agent(t);
    await other.signup(`other+${newId().slice(-12)}@example.com`);
    for (const path of [
      `/dashboard/customers/${customerId}`,
      `/dashboard/accounts/${accountId}`,
      `/dashboard/transfers/${transferId}`,
      `/dashboard/cards/${cardId}`,
    ]) {
      expect((await other.get(path)).statusCode, path).toBe(404);
    }
    await agent.get('/dashboard/business');
    await agent.post('/dashboard/environment', { environment: 'live', back: 'business' });
    expect((await agent.get(`/dashboard/customers/${customerId}`)).statusCode).toBe(404);
    await agent.post('/dashboard/environment', { environment: 'sandbox', back: 'business' });
    expect((await agent.get('/dashboard/customers/nope')).statusCode).toBe(404);
  });
});

describe('events', () => {
  it('lists events with filters and shows one with its payload', async () => {
    const list = await agent.get(`/dashboard/events?event_type=transfer.status.completed&group_id=${transferId}`);
    expect(list.body).toContain('transfer.status.completed');
    expect(list.body).not.toContain('>customer.created</a>');
    const id = /href="\/dashboard\/events\/([0-9a-f-]{36})"/.exec(list.body)![1]!;
    const detail = await agent.get(`/dashboard/events/${id}`);
    expect(detail.body).toContain(transferId);
    expect(detail.body).toContain('No webhook endpoint received this event');
    expect((await agent.get('/dashboard/events?event_type=nope')).body).toContain('Invalid filter');
  });

  it('sends a test event to one endpoint only', async () => {
    await agent.get('/dashboard/webhooks');
    await agent.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/one' });
    await agent.post('/dashboard/webhooks', { url: 'http://127.0.0.1:9/two' });
    const page = await agent.get('/dashboard/webhooks');
    const endpoint = /\/dashboard\/webhooks\/endpoints\/([0-9a-f-]{36})\/test/.exec(page.body)![1]!;
    const sent = await agent.post(`/dashboard/webhooks/endpoints/${endpoint}/test`);
    expect(sent.statusCode).toBe(303);
    const eventPath = String(sent.headers.location);
    expect(eventPath).toMatch(/^\/dashboard\/events\/[0-9a-f-]{36}$/);
    const event = await agent.get(eventPath);
    expect(event.body).toContain('webhook.test');
    expect(event.body.match(/class="card delivery"/g)).toHaveLength(1);
    const deliveries = await t.db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'status'])
      .where('event_id', '=', eventPath.split('/').pop()!)
      .execute();
    expect(deliveries).toEqual([{ endpoint_id: endpoint, status: 'pending' }]);
  });
});
