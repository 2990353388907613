import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardholder } from '../card-helpers.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * docs/api-rules.md#isolation: another business's (or the other environment's) resource is always
 * 404, also for DELETE, PATCH and PUT, and nothing of it changes.
 */
let t: TestApp;
let owner: Client;
let ownerLive: Client;
let other: Client;
let intruderKeys: string[];

beforeAll(async () => {
  t = await startTestApp();
  const biz = await t.tenant('Owner Co');
  owner = clientFor(t, biz.sandbox.secret_key);
  ownerLive = clientFor(t, biz.live.secret_key);
  const intruder = await t.tenant('Intruder Co');
  other = clientFor(t, intruder.sandbox.secret_key);
  intruderKeys = [intruder.sandbox.secret_key, biz.live.secret_key];
});
afterAll(() => t.close());

describe('DELETE /v1/collections/cards/{id}', () => {
  it("is 404 with another business's or the other environment's saved card, which stays", async () => {
    const card = (await owner.post('/v1/simulations/card-tokens', { card_number: '5555555555554444', expiry: '01/31', cvv: '123' })).body
      .data;
    for (const intruder of [other, ownerLive]) {
      const res = await intruder.delete(`/v1/collections/cards/${card.id}`);
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await owner.get(`/v1/collections/cards/${card.id}`)).status).toBe(200);
  });

  it('is 404 for an id that never existed', async () => {
    expect((await owner.delete('/v1/collections/cards/00000000-0000-7000-8000-000000000000')).status).toBe(404);
  });

  it('deletes the own card; deleting it again still answers 200 (idempotent)', async () => {
    const card = (await owner.post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '123' })).body
      .data;
    expect((await owner.delete(`/v1/collections/cards/${card.id}`)).status).toBe(200);
    expect((await owner.get(`/v1/collections/cards/${card.id}`)).status).toBe(404);
    expect((await owner.delete(`/v1/collections/cards/${card.id}`)).status).toBe(200);
  });
});

describe('every other DELETE, PATCH and PUT', () => {
  it("answers 404 for another business's and the other environment's resources and changes nothing", async () => {
    const customer = (await owner.post('/v1/customers', johnDoe())).body.data;
    const account = (await owner.post('/v1/accounts', { currency: 'NGN', label: 'x', customer_id: customer.id })).body.data;
    const application = (
      await owner.post('/v1/accounts/applications', {
        customer_id: customer.id,
        application_type: 'individual',
        data: { individual: { first_name: 'John', last_name: 'Doe' }, account_type: 'regular', currency: 'USD', label: 'main' },
      })
    ).body.data;
    const endpoint = (await owner.post('/v1/webhooks/endpoints', { url: 'https://example.com/hook' })).body.data;
    const holder = await cardholder(owner, { physical: false });
    const cardRes = await owner.post('/v1/cards', { customer_id: holder, card_type: 'virtual', card_limit: 50, name_on_card: 'John Doe' });
    expect(cardRes.status, cardRes.text).toBe(200);
    expect(application.id).toBeDefined();
    const card = cardRes.body.data.card;

    const calls: [string, string, unknown][] = [
      ['PUT', `/v1/customers/${customer.id}`, { first_name: 'Mallory' }],
      ['PATCH', `/v1/accounts/${account.id}/status`, { status: 'frozen' }],
      [
        'PUT',
        `/v1/accounts/applications/${application.id}`,
        { data: { individual: { first_name: 'Mallory', last_name: 'Doe' }, account_type: 'regular', currency: 'USD', label: 'x' } },
      ],
      ['DELETE', `/v1/accounts/applications/${application.id}`, undefined],
      ['PATCH', `/v1/webhooks/endpoints/${endpoint.id}`, { status: 'disabled' }],
      ['DELETE', `/v1/webhooks/endpoints/${endpoint.id}`, undefined],
    ];
    calls.push(
      ['PATCH', `/v1/cards/${card.id}/update`, { status: 'freeze' }],
      ['PATCH', `/v1/cards/${card.id}/spending-controls`, { spending_controls: [] }],
      ['PUT', `/v1/cards/${card.id}/pin`, { pin: '1234' }],
    );
    const before = await snapshot(customer.id, account.id, application.id, endpoint.id, card.id);
    for (const key of intruderKeys) {
      for (const [method, url, body] of calls) {
        const res = await t.request(method as 'PUT', url, body, { key });
        // 404 (not found), or 400 when this body is invalid anyway; never a success.
        expect([400, 404], `${method} ${url}: ${res.text}`).toContain(res.status);
      }
    }
    expect(await snapshot(customer.id, account.id, application.id, endpoint.id, card.id)).toEqual(before);
  });
});

async function snapshot(customer: string, account: string, application: string, endpoint: string, card: string) {
  return {
    customer: (await owner.get(`/v1/customers/${customer}`)).body.data,
    account: (await owner.get(`/v1/accounts/${account}`)).body.data,
    application: (await owner.get(`/v1/accounts/applications/${application}`)).body.data,
    endpoint: (await owner.get(`/v1/webhooks/endpoints/${endpoint}`)).body.data,
    card: (await owner.get(`/v1/cards/${card}`)).body.data,
  };
}
