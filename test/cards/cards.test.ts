import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptEnvelope, rsaKeyPair } from '../card-crypto.js';
import { cardholder } from '../card-helpers.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { isLuhnValid } from '../../src/modules/cards/secrets.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;
const keys = rsaKeyPair();

const shipping = {
  address_line1: '201 Allen St',
  city: 'New York',
  state: 'US-NY',
  postal_code: 10002,
  country_code: 'US',
  phone_number: '12125550123',
  method: 'standard',
};

/** A KYC-verified customer with both card features active. */
const newCustomer = (client = api) => cardholder(client, { physical: true });

async function newCard(body: Record<string, unknown> = {}, client = api) {
  const customer_id = (body.customer_id as string | undefined) ?? (await newCustomer(client));
  const res = await client.post('/v1/cards', { customer_id, card_type: 'virtual', card_limit: 50, name_on_card: 'John Doe', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.card;
}

const accountOf = async (customer_id: string) =>
  (await api.post('/v1/accounts', { currency: 'USD', label: 'Main', customer_id })).body.data.id as string;

const events = (groupId: string) =>
  t.db
    .selectFrom('events')
    .select(['event_type', eventEnvelope().as('payload')])
    .where('event_group_id', '=', groupId)
    .orderBy('id')
    .execute();

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant();
  api = clientFor(t, biz.sandbox.secret_key);
});
afterAll(() => t.close());

describe('POST /v1/cards', () => {
  it('issues an active USD virtual card with a Luhn-valid PAN in the BIN, sealed at rest', async () => {
    const customer_id = await newCustomer();
    const res = await api.post('/v1/cards', { customer_id, card_type: 'virtual', card_limit: 50, name_on_card: 'Jane Doe' });
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data).toMatchObject({ message: expect.any(String), status: true, id: data.card.id, fee_charged: false });
    const card = data.card;
    expect(card).toMatchObject({
      customer_id,
      card_type: 'virtual',
      status: 'active',
      currency: 'USD',
      network: 'visa',
      name_on_card: 'JANE DOE',
      spending_controls: {
        activated: true,
        single_transaction_limit: '50.00',
        daily_transaction_limit: '50.00',
        monthly_transaction_limit: null,
        type: 'virtual',
      },
      billing_address: { street: '12 Marina Road', city: 'Lagos', state: 'NG-LA', postal_code: '101001', country_iso_code: 'NG' },
      shipping: null,
    });
    expect(card.masked_pan).toMatch(/^\*{12}\d{4}$/);
    expect(card.expiry).toMatch(/^\d{1,2}\/\d{4}$/);
    const row = await t.db.selectFrom('cards').selectAll().where('id', '=', card.id).executeTakeFirstOrThrow();
    const pan = t.sealer.open(row.pan_sealed, `card:${card.id}:pan`);
    expect(isLuhnValid(pan)).toBe(true);
    expect(pan.startsWith(t.config.CARD_BIN)).toBe(true);
    expect(pan.endsWith(card.last4)).toBe(true);
    // Nothing in clear: not in the row, not in the response, not in the event.
    expect(JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(pan);
    expect(res.text).not.toContain(pan);
    const ev = await events(card.id);
    expect(ev.map((e) => e.event_type)).toEqual(['cards.status.update']);
    expect(JSON.stringify(ev)).not.toContain(pan);
    const balance = await api.get(`/v1/cards/${card.id}/balance`);
    expect(balance.body.data).toEqual({ card_id: card.id, balance: '0.00', available_balance: '0.00', currency: 'USD' });
  });

  it('issues in another supported currency and refuses an unsupported one', async () => {
    const ngn = await newCard({ currency: 'NGN', card_limit: '1000.50' });
    expect(ngn.currency).toBe('NGN');
    expect(ngn.spending_controls.single_transaction_limit).toBe('1000.50');
    const customer_id = await newCustomer();
    const bad = await api.post('/v1/cards', { customer_id, card_type: 'virtual', card_limit: 50, name_on_card: 'J D', currency: 'JPY' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('currency');
  });

  it('ships a physical card, inactive until activated', async () => {
    const card = await newCard({ card_type: 'physical', shipping_address: shipping });
    expect(card.status).toBe('inactive');
    expect(card.shipping).toMatchObject({ city: 'New York', postal_code: '10002', method: 'standard', fulfilment_status: 'ordered' });
    expect(card.date_activated).toBeNull();
    const shipped = await api.post(`/v1/simulations/cards/${card.id}/fulfilment`, { status: 'shipped' });
    expect(shipped.body.data.shipping.fulfilment_status).toBe('shipped');
    const again = await api.post(`/v1/simulations/cards/${card.id}/fulfilment`, { status: 'shipped' });
    expect(again.status).toBe(409);
    const frozen = await api.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' });
    expect(frozen.status).toBe(409);
    expect(frozen.body.error.code).toBe('invalid_state_transition');
    const active = await api.patch(`/v1/cards/${card.id}/update`, { status: 'active' });
    expect(active.status).toBe(200);
    expect(active.body.data).toMatchObject({ status: 'active', shipping: { fulfilment_status: 'delivered' } });
    expect(active.body.data.date_activated).not.toBeNull();
  });

  it.each([
    ['a physical card without address', { card_type: 'physical' }, 'shipping_address'],
    ['a virtual card with an address', { shipping_address: shipping }, 'shipping_address'],
    ['an unknown card type', { card_type: 'plastic' }, 'card_type'],
    ['an unknown field', { color: 'gold' }, 'color'],
    ['a bad shipping method', { card_type: 'physical', shipping_address: { ...shipping, method: 'pigeon' } }, 'shipping_address.method'],
    ['a name with digits', { name_on_card: 'J0hn' }, 'name_on_card'],
  ])('rejects %s with 400', async (_n, patch, field) => {
    const customer_id = await newCustomer();
    const res = await api.post('/v1/cards', { customer_id, card_type: 'virtual', card_limit: 50, name_on_card: 'John Doe', ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  it('rejects bad amounts with invalid_amount and an unknown customer with 404', async () => {
    const customer_id = await newCustomer();
    for (const card_limit of [0, -5, '10.001', 'abc']) {
      const res = await api.post('/v1/cards', { customer_id, card_type: 'virtual', card_limit, name_on_card: 'John Doe' });
      expect(res.status, String(card_limit)).toBe(400);
      expect(res.body.error.code).toBe('invalid_amount');
    }
    const stranger = await newCustomer(clientFor(t, (await t.tenant()).sandbox.secret_key));
    const res = await api.post('/v1/cards', { customer_id: stranger, card_type: 'virtual', card_limit: 5, name_on_card: 'John Doe' });
    expect(res.status).toBe(404);
    expect((await api.get(`/v1/cards?customer_id=${stranger}`)).body.data.total_items).toBe(0);
  });

  it('replays a retried creation without a second card', async () => {
    const customer_id = await newCustomer();
    const body = { customer_id, card_type: 'virtual', card_limit: 50, name_on_card: 'John Doe' };
    const a = await api.post('/v1/cards', body, { idempotencyKey: `card-${customer_id}` });
    const b = await api.post('/v1/cards', body, { idempotencyKey: `card-${customer_id}` });
    expect(b.headers['idempotency-replayed']).toBe('true');
    expect(b.text).toBe(a.text);
    expect((await api.get(`/v1/cards?customer_id=${customer_id}`)).body.data.total_items).toBe(1);
  });
});

describe('issuing gates (KYC level and card features)', () => {
  it('needs approved KYC, then the feature: 403 otherwise, nothing created', async () => {
    const body = (customer_id: string, card_type = 'virtual') => ({
      customer_id,
      card_type,
      card_limit: 5,
      name_on_card: 'John Doe',
      ...(card_type === 'physical' ? { shipping_address: shipping } : {}),
    });
    const plain = (await api.post('/v1/customers', johnDoe())).body.data.id;
    const noKyc = await api.post('/v1/cards', body(plain));
    expect(noKyc.status).toBe(403);
    expect(noKyc.body.error.code).toBe('kyc_level_insufficient');
    await api.post(`/v1/simulations/kyc/${plain}`, { outcome: 'approved' });
    const noFeature = await api.post('/v1/cards', body(plain));
    expect(noFeature.status).toBe(403);
    expect(noFeature.body.error.code).toBe('feature_not_active');
    const basic = await cardholder(api);
    expect((await api.post('/v1/cards', body(basic))).status).toBe(200);
    const physical = await api.post('/v1/cards', body(basic, 'physical'));
    expect(physical.status).toBe(403);
    expect(physical.body.error.code).toBe('kyc_level_insufficient');
    expect((await api.get(`/v1/cards?customer_id=${plain}`)).body.data.total_items).toBe(0);
    expect((await api.get(`/v1/cards?customer_id=${basic}`)).body.data.total_items).toBe(1);
  });
});

describe('GET /v1/cards', () => {
  it('lists newest first with filters and pagination, isolated per business and environment', async () => {
    const own = clientFor(t, (await t.tenant()).sandbox.secret_key);
    const customer = await newCustomer(own);
    const a = await newCard({ customer_id: customer }, own);
    const b = await newCard({ customer_id: customer, card_type: 'physical', shipping_address: shipping }, own);
    const c = await newCard({ customer_id: customer, currency: 'EUR' }, own);
    const page = await own.get('/v1/cards?items_per_page=2');
    expect(page.body.data).toMatchObject({ total_items: 3, total_pages: 2, page: 1 });
    expect(page.body.data.items.map((x: { id: string }) => x.id)).toEqual([c.id, b.id]);
    const next = await own.get(`/v1/cards?items_per_page=2&cursor=${page.body.data.next_cursor}`);
    expect(next.body.data.items.map((x: { id: string }) => x.id)).toEqual([a.id]);
    expect((await own.get('/v1/cards?status=inactive')).body.data.items.map((x: { id: string }) => x.id)).toEqual([b.id]);
    expect((await own.get('/v1/cards?card_type=virtual')).body.data.total_items).toBe(2);
    expect((await own.get('/v1/cards?currency=EUR')).body.data.total_items).toBe(1);
    expect((await own.get(`/v1/cards?customer_id=${customer}&from=2000-01-01`)).body.data.total_items).toBe(3);
    for (const q of ['status=melted', 'card_type=x', 'customer_id=nope', 'items_per_page=0', 'currency=XXX']) {
      expect((await own.get(`/v1/cards?${q}`)).status, q).toBe(400);
    }
    expect((await api.get(`/v1/cards/${a.id}`)).status).toBe(404);
    expect((await clientFor(t, biz.live.secret_key).get('/v1/cards')).body.data.total_items).toBe(0);
  });

  it('gets one card; other business, other environment and unknown ids are 404', async () => {
    const card = await newCard();
    expect((await api.get(`/v1/cards/${card.id}`)).body.data.id).toBe(card.id);
    const live = clientFor(t, biz.live.secret_key);
    const stranger = clientFor(t, (await t.tenant()).sandbox.secret_key);
    for (const client of [live, stranger]) {
      for (const path of ['', '/balance', '/sensitive-details', '/pin']) {
        const res = await client.get(`/v1/cards/${card.id}${path}`, { headers: { 'x-client-public-key': keys.header } });
        expect(res.status, path).toBe(404);
      }
      expect((await client.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' })).status).toBe(404);
      expect((await client.patch(`/v1/cards/${card.id}/spending-controls`, { activated: false })).status).toBe(404);
      expect((await client.put(`/v1/cards/${card.id}/pin`, { card_pin: '2580' })).status).toBe(404);
    }
    expect((await api.get('/v1/cards/0190a000-0000-7000-8000-000000000000')).status).toBe(404);
    expect((await api.get('/v1/cards/not-a-uuid')).status).toBe(400);
    expect((await api.get(`/v1/cards/${card.id}`)).body.data.status).toBe('active');
  });
});

describe('card status machine', () => {
  it('freezes and unfreezes, emitting cards.status.update per change only', async () => {
    const card = await newCard();
    const frozen = await api.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' });
    expect(frozen.status).toBe(200);
    expect(frozen.body.data.status).toBe('freeze');
    expect((await api.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' })).body.data.status).toBe('freeze');
    expect((await api.patch(`/v1/cards/${card.id}/update`, { status: 'active' })).body.data.status).toBe('active');
    const ev = await events(card.id);
    expect(ev.map((e) => (e.payload as { event_data: { status: string } }).event_data.status)).toEqual(['active', 'freeze', 'active']);
  });

  it.each(['blocked', 'lost', 'stolen'])('%s is final: 409 card_blocked afterwards', async (status) => {
    const card = await newCard();
    await api.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' });
    const res = await api.patch(`/v1/cards/${card.id}/update`, { status });
    expect(res.body.data.status).toBe(status);
    for (const next of ['active', 'freeze', 'blocked', 'lost', 'stolen']) {
      const again = await api.patch(`/v1/cards/${card.id}/update`, { status: next });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('card_blocked');
    }
    expect((await api.patch(`/v1/cards/${card.id}/spending-controls`, { activated: false })).body.error.code).toBe('card_blocked');
    expect((await api.put(`/v1/cards/${card.id}/pin`, { card_pin: '2580' })).body.error.code).toBe('card_blocked');
    expect((await api.get(`/v1/cards/${card.id}`)).body.data.status).toBe(status);
  });

  it('rejects statuses outside the closed list and sets the limit when asked', async () => {
    const card = await newCard();
    for (const status of ['inactive', 'deleted', 'FREEZE', '']) {
      expect((await api.patch(`/v1/cards/${card.id}/update`, { status })).status, status).toBe(400);
    }
    expect((await api.patch(`/v1/cards/${card.id}/update`, {})).status).toBe(400);
    const res = await api.patch(`/v1/cards/${card.id}/update`, { status: 'active', limit: 1000 });
    expect(res.body.data.spending_controls).toMatchObject({ single_transaction_limit: '1000.00', daily_transaction_limit: '1000.00' });
    expect((await api.patch(`/v1/cards/${card.id}/update`, { status: 'active', limit: 0 })).body.error.code).toBe('invalid_amount');
  });
});

describe('spending controls', () => {
  it('sets, clears and validates limits and merchant category lists', async () => {
    const card = await newCard();
    const res = await api.patch(`/v1/cards/${card.id}/spending-controls`, {
      single_transaction_limit: '25.50',
      daily_transaction_limit: null,
      monthly_transaction_limit: 500,
      allowed_merchant_categories: ['5411', 'Groceries', 'groceries'],
      blocked_merchant_categories: ['7995'],
    });
    expect(res.status).toBe(200);
    expect(res.body.data.spending_controls).toEqual({
      activated: true,
      single_transaction_limit: '25.50',
      monthly_transaction_limit: '500.00',
      allowed_merchant_categories: ['5411', 'groceries'],
      blocked_merchant_categories: ['7995'],
      type: 'virtual',
    });
    const off = await api.patch(`/v1/cards/${card.id}/spending-controls`, { activated: false });
    expect(off.body.data.spending_controls).toMatchObject({ activated: false, single_transaction_limit: '25.50' });
    const bad = await api.patch(`/v1/cards/${card.id}/spending-controls`, {
      single_transaction_limit: '1.001',
      daily_transaction_limit: -1,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'daily_transaction_limit',
      'single_transaction_limit',
    ]);
    const badCat = await api.patch(`/v1/cards/${card.id}/spending-controls`, { blocked_merchant_categories: ['12'], extra: 1 });
    expect(badCat.status).toBe(400);
    expect((await api.get(`/v1/cards/${card.id}`)).body.data.spending_controls.single_transaction_limit).toBe('25.50');
  });
});

describe('card secrets', () => {
  it('returns the card details only encrypted for the client key, and they decrypt with node:crypto', async () => {
    const card = await newCard();
    const res = await api.get(`/v1/cards/${card.id}/sensitive-details`, { headers: { 'x-client-public-key': keys.header } });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(Object.keys(res.body.data).sort()).toEqual(['ciphertext', 'encrypted_key', 'nonce']);
    const secret = decryptEnvelope(keys.privateKey, res.body.data);
    expect(Object.keys(secret).sort()).toEqual(['card_number', 'cvv', 'expiry']);
    expect(isLuhnValid(secret.card_number)).toBe(true);
    expect(secret.card_number.endsWith(card.last4)).toBe(true);
    expect(secret.cvv).toMatch(/^\d{3}$/);
    const [m, y] = card.expiry.split('/');
    expect(secret.expiry).toBe(`${m.padStart(2, '0')}/${y.slice(2)}`);
    expect(res.text).not.toContain(secret.card_number);
  });

  it('returns the PIN encrypted and lets the owner change it', async () => {
    const card = await newCard();
    const first = decryptEnvelope(
      keys.privateKey,
      (await api.get(`/v1/cards/${card.id}/pin`, { headers: { 'x-client-public-key': keys.header } })).body.data,
    );
    expect(first.pin).toMatch(/^\d{4}$/);
    const set = await api.put(`/v1/cards/${card.id}/pin`, { card_pin: '2580' });
    expect(set.body.data).toEqual({ message: 'Card PIN updated successfully' });
    const after = decryptEnvelope(
      keys.privateKey,
      (await api.get(`/v1/cards/${card.id}/pin`, { headers: { 'x-client-public-key': keys.header } })).body.data,
    );
    expect(after).toEqual({ pin: '2580' });
    for (const card_pin of ['1234', '0000', '12', 'abcd', '1234567']) {
      expect((await api.put(`/v1/cards/${card.id}/pin`, { card_pin })).status, card_pin).toBe(400);
    }
  });

  it('needs a usable X-Client-Public-Key: 400 otherwise', async () => {
    const card = await newCard();
    for (const path of ['sensitive-details', 'pin']) {
      const missing = await api.get(`/v1/cards/${card.id}/${path}`);
      expect(missing.status).toBe(400);
      expect(missing.body.error.code).toBe('missing_client_public_key');
      for (const header of ['garbage!!', Buffer.from('not a key').toString('base64'), rsaKeyPair(1024).header]) {
        const bad = await api.get(`/v1/cards/${card.id}/${path}`, { headers: { 'x-client-public-key': header } });
        expect(bad.status).toBe(400);
        expect(bad.body.error.code).toBe('invalid_client_public_key');
      }
    }
  });
});

describe('card applications', () => {
  it('creates, gets, lists and decides applications with cards.application.update events', async () => {
    const customer_id = (await api.post('/v1/customers', johnDoe())).body.data.id;
    const account_id = await accountOf(customer_id);
    const body = { customer_id, account_id, annual_remuneration: 120000, estimated_monthly_limit: '200', ip_address: '12.23.31.23' };
    const res = await api.post('/v1/cards/applications/new', body);
    expect(res.status).toBe(200);
    const { id } = res.body.data;
    expect(res.body.data).toMatchObject({ message: 'Card application request successful', status: 'inactive' });
    expect(res.body.data.application).toMatchObject({ status: 'inactive', application_status: 'needs_verification' });
    expect(res.body.data.application).not.toHaveProperty('application_link');
    const got = await api.get(`/v1/cards/applications/${id}`);
    expect(got.body.data).toMatchObject({
      id,
      customer_id,
      currency: 'USD',
      application_status: 'needs_verification',
      annual_remuneration: '120000.00',
      estimated_monthly_limit: '200.00',
      address: { street: '12 Marina Road', country_code: 'NG' },
    });
    const approved = await api.post(`/v1/simulations/card-applications/${id}`, { status: 'approved' });
    expect(approved.body.data).toMatchObject({ status: 'active', application_status: 'approved' });
    expect((await api.get(`/v1/cards/applications?customer_id=${customer_id}`)).body.data.items.map((a: { id: string }) => a.id)).toEqual([
      id,
    ]);
    expect((await api.get('/v1/cards/applications?status=approved')).body.data.total_items).toBeGreaterThanOrEqual(1);
    expect((await api.get('/v1/cards/applications?status=maybe')).status).toBe(400);
    const denied = await api.post(`/v1/simulations/card-applications/${id}`, { status: 'denied' });
    expect(denied.body.data).toMatchObject({ status: 'blocked', application_status: 'denied' });
    expect((await api.post(`/v1/simulations/card-applications/${id}`, { status: 'approved' })).status).toBe(409);
    expect((await events(id)).map((e) => e.event_type)).toEqual([
      'cards.application.update',
      'cards.application.update',
      'cards.application.update',
    ]);
  });

  it('approves at once when the customer passed KYC', async () => {
    const customer_id = await newCustomer();
    const res = await api.post('/v1/cards/applications/new', {
      customer_id,
      account_id: await accountOf(customer_id),
      annual_remuneration: 1,
      estimated_monthly_limit: 1,
      ip_address: '2001:db8::1',
    });
    expect(res.body.data.status).toBe('active');
    expect(res.body.data.application.application_status).toBe('approved');
  });

  it('validates applications and hides them from other businesses and live', async () => {
    const customer_id = await newCustomer();
    const bad = await api.post('/v1/cards/applications/new', {
      customer_id,
      account_id: 'x',
      annual_remuneration: -1,
      estimated_monthly_limit: 1,
      ip_address: '999.1.1.1',
    });
    expect(bad.status).toBe(400);
    const account_id = await accountOf(customer_id);
    const amounts = await api.post('/v1/cards/applications/new', {
      customer_id,
      account_id,
      annual_remuneration: -1,
      estimated_monthly_limit: '1.234',
      ip_address: '10.0.0.1',
    });
    expect(amounts.body.error.code).toBe('invalid_amount');
    expect(amounts.body.error.details).toHaveLength(2);
    const other = await accountOf(await newCustomer());
    const foreign = await api.post('/v1/cards/applications/new', {
      customer_id,
      account_id: other,
      annual_remuneration: 1,
      estimated_monthly_limit: 1,
      ip_address: '10.0.0.1',
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details[0].field).toBe('account_id');
    const unknown = await api.post('/v1/cards/applications/new', {
      customer_id,
      account_id: customer_id,
      annual_remuneration: 1,
      estimated_monthly_limit: 1,
      ip_address: '10.0.0.1',
    });
    expect(unknown.status).toBe(404);
    const ok = await api.post('/v1/cards/applications/new', {
      customer_id,
      account_id,
      annual_remuneration: 1,
      estimated_monthly_limit: 1,
      ip_address: '10.0.0.1',
    });
    const id = ok.body.data.id;
    expect((await clientFor(t, biz.live.secret_key).get(`/v1/cards/applications/${id}`)).status).toBe(404);
    const live = await clientFor(t, biz.live.secret_key).post(`/v1/simulations/card-applications/${id}`, { status: 'approved' });
    expect(live.status).toBe(404);
    expect((await clientFor(t, biz.live.secret_key).post(`/v1/simulations/cards/${id}/fulfilment`, { status: 'shipped' })).status).toBe(
      404,
    );
  });
});
