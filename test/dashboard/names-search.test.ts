import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { activateFeature, passport } from '../kyc-helpers.js';

/**
 * Names beside ids, the header's search, the customer page's order, the accounts' totals and the
 * account's balance chart, over plain HTTP.
 */
let t: TestApp;
let agent: Agent;
let api: Client;
let email: string;
let customerId: string;
let mainId: string;
let otherId: string;
let cardId: string;
let transferId: string;
const clientRef = `invoice-${newId().slice(-8)}`;

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`names+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  api = clientFor(t, agent.textOf('new-secret-sandbox')!);
  email = `ada.lovelace+${newId().slice(-8)}@example.com`;
  customerId = (await api.post('/v1/customers', johnDoe({ first_name: 'Ada', last_name: 'Lovelace', email }))).body.data.id;
  expect((await api.post('/v1/customers/kyc/upload-document', passport(customerId))).status).toBe(200);
  await activateFeature(api, customerId, 'virtual_cards', {
    annual_remuneration: 12000,
    estimated_monthly_limit: '200.50',
    ip_address: '12.23.31.23',
  });
  mainId = (await api.post('/v1/accounts', { currency: 'USD', label: 'Household', customer_id: customerId })).body.data.id;
  otherId = (await api.post('/v1/accounts', { currency: 'USD', label: 'Savings pot', customer_id: customerId })).body.data.id;
  await api.post(`/v1/simulations/accounts/${mainId}/fund`, { amount: '300.00' });
  const transfer = await api.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: mainId },
    destination: { destination_type: 'internal_account', id: otherId },
    amount: '120.00',
    client_reference: clientRef,
  });
  expect(transfer.status, transfer.text).toBe(200);
  transferId = transfer.body.data.id;
  const card = await api.post('/v1/cards', {
    customer_id: customerId,
    card_type: 'virtual',
    card_limit: '500.00',
    name_on_card: 'ADA LOVELACE',
  });
  cardId = card.body.data.card?.id ?? card.body.data.id;
});
afterAll(() => t.close());

const location = (res: { headers: Record<string, unknown> }) => res.headers.location as string | undefined;

describe('names beside ids', () => {
  it('shows the account labels and the customer names of a transfer, in the list and on its page', async () => {
    for (const body of [(await agent.get('/dashboard/transfers')).body, (await agent.get(`/dashboard/transfers/${transferId}`)).body]) {
      expect(body).toContain(`href="/dashboard/accounts/${mainId}" title="${mainId}">Household</a>`);
      expect(body).toContain(`href="/dashboard/accounts/${otherId}" title="${otherId}">Savings pot</a>`);
      expect(body).toContain(`href="/dashboard/customers/${customerId}" title="${customerId}">Ada Lovelace</a>`);
    }
  });

  it('shows the account and the other side of a transaction, in the list and on its page', async () => {
    const list = await agent.get(`/dashboard/transactions?account_id=${mainId}&reference=${transferId}`);
    expect(list.body).toContain('>Household</a>');
    expect(list.body).toContain('>Savings pot</a>');
    expect(list.body).toContain('>Ada Lovelace</a>');
    const id = /href="\/dashboard\/transactions\/([0-9a-f-]{36})"/.exec(list.body)![1]!;
    const page = await agent.get(`/dashboard/transactions/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('>Savings pot</a>');
    expect(page.body).toContain(`href="/dashboard/transfers/${transferId}"`);
  });

  it("shows the customer's name on the accounts and cards lists and pages", async () => {
    for (const path of ['/dashboard/accounts', `/dashboard/accounts/${mainId}`, '/dashboard/cards', `/dashboard/cards/${cardId}`]) {
      expect((await agent.get(path)).body, path).toContain(`title="${customerId}">Ada Lovelace</a>`);
    }
  });
});

describe('accounts', () => {
  it('shows the totals per currency of the environment above the list', async () => {
    const page = await agent.get('/dashboard/accounts?label=Household');
    // 300 funded, 120 moved between the two accounts: 300 in all, whatever the filter.
    expect(page.body).toMatch(/data-total="USD">300\.00 USD/);
    expect(page.body.indexOf('Totals per currency')).toBeLessThan(page.body.indexOf('<table'));
  });

  it("draws the account's closing balance per day, ending today at its balance", async () => {
    const page = await agent.get(`/dashboard/accounts/${otherId}`);
    expect(page.body).toContain('<svg class="chart"');
    expect(page.body).toContain(`${new Date().toISOString().slice(0, 10)}: 120.00 USD`);
    expect(page.body.match(/<circle class="chart-dot"/g)).toHaveLength(30);
    // Before the account had any entry, its closing balance is zero.
    const first = new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10);
    expect(page.body).toContain(`${first}: 0.00 USD`);
  });
});

describe('customer page', () => {
  it('shows details (phone, address, date of birth) and accounts first, features after, events newest first', async () => {
    const body = (await agent.get(`/dashboard/customers/${customerId}`)).body;
    expect(body).toContain('+2348012345678');
    expect(body).toContain('12 Marina Road');
    expect(body).toContain('1990-01-15');
    const at = (text: string) => {
      const i = body.indexOf(text);
      expect(i, text).toBeGreaterThan(-1);
      return i;
    };
    expect(at('id="details-title"')).toBeLessThan(at('id="accounts-title"'));
    expect(at('id="accounts-title"')).toBeLessThan(at('id="events-title"'));
    expect(at('id="events-title"')).toBeLessThan(at('id="features-title"'));
    const times = [...body.slice(at('id="events-title"')).matchAll(/<time datetime="([^"]+)"/g)].map((m) => m[1]!);
    expect(times.length).toBeGreaterThan(1);
    expect([...times].sort().reverse()).toEqual(times);
  });
});

describe('search', () => {
  it('is in the header of every signed-in page', async () => {
    expect((await agent.get('/dashboard/overview')).body).toMatch(/<form method="get" action="\/dashboard\/search"[^>]*role="search"/);
  });

  it('opens the page of an object found by its id', async () => {
    const event = /href="\/dashboard\/events\/([0-9a-f-]{36})"/.exec((await agent.get('/dashboard/events')).body)![1]!;
    for (const [id, path] of [
      [customerId, `/dashboard/customers/${customerId}`],
      [mainId.toUpperCase(), `/dashboard/accounts/${mainId}`],
      [transferId, `/dashboard/transfers/${transferId}`],
      [cardId, `/dashboard/cards/${cardId}`],
      [event, `/dashboard/events/${event}`],
    ]) {
      const res = await agent.get(`/dashboard/search?q=${id}`);
      expect(res.statusCode, id).toBe(303);
      expect(location(res)).toBe(path);
    }
  });

  it('opens an API request found by the request id it was answered with', async () => {
    const answered = await api.get(`/v1/customers/${customerId}`);
    await t.app.requestLog!.flush();
    const requestId = answered.headers['x-request-id'] as string;
    const res = await agent.get(`/dashboard/search?q=${encodeURIComponent(requestId)}`);
    const path = location(res) ?? /href="(\/dashboard\/requests\/[0-9a-f-]{36})"/.exec(res.body)?.[1];
    expect(path, res.body.slice(-2000)).toMatch(/^\/dashboard\/requests\/[0-9a-f-]{36}$/);
    expect((await agent.get(path!)).body).toContain(requestId);
  });

  it('finds a webhook endpoint by its id', async () => {
    const created = await api.post('/v1/webhooks/endpoints', { url: 'http://127.0.0.1:9/hook' });
    expect(created.status, created.text).toBeLessThan(300);
    const id = created.body.data.id as string;
    expect(location(await agent.get(`/dashboard/search?q=${id}`))).toBe(`/dashboard/webhooks/endpoints/${id}`);
  });

  it("finds a customer by email (any case), a transfer by its client reference and a transaction by its transfer's reference", async () => {
    const byEmail = await agent.get(`/dashboard/search?q=${encodeURIComponent(email.toUpperCase())}`);
    expect(byEmail.statusCode).toBe(200);
    expect(byEmail.body).toContain(`href="/dashboard/customers/${customerId}">Ada Lovelace</a>`);
    const byRef = await agent.get(`/dashboard/search?q=${clientRef}`);
    expect(byRef.body).toContain(`href="/dashboard/transfers/${transferId}">${clientRef}</a>`);
    const byName = await agent.get('/dashboard/search?q=Lovelace');
    expect(byName.body).toContain(`href="/dashboard/customers/${customerId}"`);
  });

  it('finds nothing of another business or environment, and says so', async () => {
    const other = new Agent(t);
    await other.signup(`names-other+${newId().slice(-12)}@example.com`);
    for (const q of [customerId, email, clientRef, transferId]) {
      const res = await other.get(`/dashboard/search?q=${encodeURIComponent(q)}`);
      expect(res.statusCode, q).toBe(200);
      expect(res.body).toContain('Nothing in this environment matches');
      expect(res.body).not.toContain(`href="/dashboard/customers/${customerId}"`);
      expect(res.body).not.toContain(`href="/dashboard/transfers/${transferId}"`);
    }
    await agent.get('/dashboard/business');
    await agent.post('/dashboard/environment', { environment: 'live', back: 'business' });
    expect((await agent.get(`/dashboard/search?q=${customerId}`)).statusCode).toBe(200);
    expect((await agent.get(`/dashboard/search?q=${encodeURIComponent(email)}`)).body).toContain('Nothing in this environment matches');
    await agent.post('/dashboard/environment', { environment: 'sandbox', back: 'business' });
  });

  it('answers an empty search with what it can find, and a too long one with 400', async () => {
    expect((await agent.get('/dashboard/search')).body).toContain('Search by any id');
    expect((await agent.get(`/dashboard/search?q=${'x'.repeat(201)}`)).statusCode).toBe(400);
  });
});
