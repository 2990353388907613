import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ledger/index.js';
import { expireDueCollections } from '../../src/modules/collections/lifecycle.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let api: Client;
let live: Client;
let other: Client;
let tenantId: string;
let customerId: string;

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await t.tenant('Collect Co');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
  live = clientFor(t, tenant.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
});
afterAll(async () => t?.close());

async function account(currency: string, customer: string | null = customerId) {
  return (await api.post('/v1/accounts', { currency, label: 'c', ...(customer ? { customer_id: customer } : {}) })).body.data.id as string;
}
const acct = async (id: string) => (await api.get(`/v1/accounts/${id}`)).body.data;
const collection = (dest: string, methods: string[], extra: Record<string, unknown> = {}) => ({
  amount: '50.00',
  currency: 'USD',
  country: 'NG',
  customer_id: customerId,
  client_customer_id: 'shopper-1',
  client_reference: 'order-1',
  source: { source_type: 'external', methods },
  destination: { destination_type: 'internal_account', id: dest },
  metadata: { order_id: '12345' },
  ...extra,
});
const eventsOf = async (id: string) =>
  (await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', id).orderBy('id').execute()).map((e) => e.event_type);
async function reconciled() {
  const report = await ledger.reconcile(t.db, tenantId);
  expect(report.ok, JSON.stringify(report)).toBe(true);
}
async function checkout(link: string, card: Record<string, unknown>) {
  const url = new URL(link);
  const session = url.searchParams.get('session');
  return t.request('POST', `${url.pathname}/pay`, { session, expiry: '12/34', cvv: '123', ...card });
}

describe('card collections through the hosted checkout page', () => {
  it('the payer pays on the page: settles amount less fee, exactly once', async () => {
    const dest = await account('USD');
    const res = await api.post('/v1/collections', collection(dest, ['card', 'apple_pay']));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const c = res.body.data;
    expect(c).toMatchObject({
      status: 'pending',
      transaction_status: 'pending',
      detailed_status: 'created',
      method: 'card',
      amount: '50.00',
      metadata: { order_id: '12345' },
    });
    expect(c.payment_link).toMatch(new RegExp(`/checkout/${c.id}\\?session=`));
    const url = new URL(c.payment_link);
    const pageRes = await t.request('GET', `${url.pathname}${url.search}`);
    expect(pageRes.status).toBe(200);
    expect(pageRes.headers['content-type']).toContain('text/html');
    expect(pageRes.text).toContain('Pay 50.00 USD');
    expect((await t.request('GET', `${url.pathname}?session=wrong`)).status).toBe(404);
    expect(
      (await t.request('POST', `${url.pathname}/pay`, { session: 'wrong', card_number: '4242424242424242', expiry: '12/34', cvv: '123' }))
        .status,
    ).toBe(404);
    const bad = await checkout(c.payment_link, { card_number: '4242424242424241', expiry: '01/20', cvv: '12' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['card_number', 'cvv', 'expiry']);
    expect(bad.text).not.toContain('4242424242424241');

    const paid = await checkout(c.payment_link, { card_number: '4242 4242 4242 4242', save_card: true });
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe('succeeded');
    const got = (await api.get(`/v1/collections/${c.id}`)).body.data;
    expect(got).toMatchObject({ status: 'completed', detailed_status: 'completed', fee: '0.75', net_amount: '49.25' });
    expect(got).not.toHaveProperty('payment_link');
    expect(await acct(dest)).toMatchObject({ balance: '49.25', available_balance: '49.25' });
    const txs = (await api.get(`/v1/transactions?account_id=${dest}`)).body.data.items;
    expect(txs[0]).toMatchObject({
      direction: 'in',
      amount: '50.00',
      fee: '0.75',
      channel: 'card',
      balance_before: '0.00',
      balance_after: '49.25',
      status: 'completed',
    });
    expect((await checkout(c.payment_link, { card_number: '4242424242424242' })).status).toBe(409);
    expect((await api.post(`/v1/simulations/collections/${c.id}/fail`)).status).toBe(409);
    expect(await eventsOf(c.id)).toEqual(['collection.status.pending', 'collection.status.completed']);

    // An array, as the reference answers (GET /v1/collections/cards).
    const saved = (await api.get(`/v1/collections/cards?customer_id=${customerId}`)).body.data;
    expect(saved).toHaveLength(1);
    expect(saved[0]).toMatchObject({
      card_last4: '4242',
      card_brand: 'visa',
      card_exp_month: '12',
      card_exp_year: '2034',
      is_default: true,
    });
    const stored = await t.db.selectFrom('saved_cards').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain('4242424242424242');
    await reconciled();
  });

  it('a declined card fails the collection and moves nothing', async () => {
    const dest = await account('USD');
    const c = (await api.post('/v1/collections', collection(dest, ['card']))).body.data;
    const res = await checkout(c.payment_link, { card_number: '4000000000000002' });
    expect(res.body.data).toMatchObject({ status: 'failed', failure_code: 'card_declined' });
    expect((await api.get(`/v1/collections/${c.id}`)).body.data).toMatchObject({
      status: 'failed',
      detailed_status: 'provider_failed',
      failure_code: 'card_declined',
    });
    expect(await acct(dest)).toMatchObject({ balance: '0.00' });
    expect(await eventsOf(c.id)).toEqual(['collection.status.pending', 'collection.status.failed']);
  });
});

describe('payment intents and saved card tokens', () => {
  it('charges a token at once, declines the magic numbers, and charges later through /charge', async () => {
    const dest = await account('USD');
    const token = async (card_number: string) =>
      (await api.post('/v1/simulations/card-tokens', { card_number, expiry: '12/30', cvv: '999', customer_id: customerId })).body.data
        .card_token as string;
    const intent = (extra: Record<string, unknown> = {}) => ({
      customer_id: customerId,
      client_customer_id: 'm-1',
      amount: '3.50',
      currency: 'USD',
      client_reference: 'order-abc',
      destination: { destination_type: 'internal_account', id: dest },
      source: { source_type: 'external', id: 'src_1', methods: ['card'] },
      ...extra,
    });
    const good = await token('4242424242424242');
    expect(good).toMatch(/^tokn_/);
    const ok = await api.post('/v1/collections/cards/payment-intents', intent({ card_token: good }));
    expect(ok.body.data).toMatchObject({ status: 'succeeded', collection_status: 'completed', requires_action: false });
    expect(ok.body.data.transaction_id).toBeTruthy();
    expect(await acct(dest)).toMatchObject({ balance: '3.45' });

    const poor = await api.post('/v1/collections/cards/payment-intents', intent({ card_token: await token('4000000000009995') }));
    expect(poor.body.data).toMatchObject({ status: 'failed', failure_code: 'insufficient_funds', collection_status: 'failed' });

    const created = await api.post('/v1/collections/cards/payment-intents', intent());
    expect(created.body.data).toMatchObject({ status: 'created', collection_status: 'pending' });
    expect(created.body.data.payment_link).toContain('/checkout/');
    const declined = await api.post('/v1/collections/cards/payment-intents/charge', {
      payment_intent_id: created.body.data.intent_id,
      card_token: await token('4000000000000002'),
      first_name: 'Jane',
    });
    expect(declined.status).toBe(200);
    expect(declined.body.data).toMatchObject({ status: 'failed', failure_code: 'card_declined' });
    const again = await api.post('/v1/collections/cards/payment-intents/charge', {
      payment_intent_id: created.body.data.intent_id,
      card_token: good,
    });
    expect(again.status).toBe(409);

    const second = await api.post('/v1/collections/cards/payment-intents', intent());
    const charged = await api.post('/v1/collections/cards/payment-intents/charge', {
      payment_intent_id: second.body.data.intent_id,
      card_token: good,
    });
    expect(charged.body.data).toMatchObject({ status: 'succeeded' });
    expect(await acct(dest)).toMatchObject({ balance: '6.90' });
    expect(
      (
        await api.post('/v1/collections/cards/payment-intents/charge', {
          payment_intent_id: second.body.data.intent_id,
          card_token: 'tokn_nope',
        })
      ).status,
    ).toBe(409);
    const third = await api.post('/v1/collections/cards/payment-intents', intent());
    expect(
      (
        await api.post('/v1/collections/cards/payment-intents/charge', {
          payment_intent_id: third.body.data.intent_id,
          card_token: 'tokn_nope',
        })
      ).status,
    ).toBe(404);
    expect(
      (await other.post('/v1/collections/cards/payment-intents/charge', { payment_intent_id: third.body.data.intent_id, card_token: good }))
        .status,
    ).toBe(404);
    await reconciled();
  });

  it('manages saved cards: get, list, idempotent delete, isolation; tokens are sandbox only', async () => {
    const res = await api.post('/v1/simulations/card-tokens', { card_number: '5555555555554444', expiry: '01/31', cvv: '123' });
    expect(res.body.data).toMatchObject({ card_brand: 'mastercard', card_last4: '4444', customer_id: null });
    expect(JSON.stringify(res.body)).not.toContain('5555555555554444');
    const id = res.body.data.id;
    expect((await api.get(`/v1/collections/cards/${id}`)).body.data.card_token).toBe(res.body.data.card_token);
    expect((await other.get(`/v1/collections/cards/${id}`)).status).toBe(404);
    expect((await api.delete(`/v1/collections/cards/${id}`)).body.data).toEqual({ success: true, message: 'card deleted successfully' });
    expect((await api.delete(`/v1/collections/cards/${id}`)).status).toBe(200);
    expect((await api.get(`/v1/collections/cards/${id}`)).status).toBe(404);
    expect((await live.post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '123' })).status).toBe(
      404,
    );
    expect((await api.post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '12345' })).status).toBe(
      400,
    );
  });
});

describe('bank transfer collections', () => {
  it('gives instructions; an inbound payment quoting the reference completes it', async () => {
    const dest = await account('NGN');
    const res = await api.post('/v1/collections', collection(dest, ['bank_transfer'], { currency: 'NGN', amount: '5000.00' }));
    const c = res.body.data;
    const number = (await acct(dest)).account_number;
    expect(c).toMatchObject({
      status: 'pending',
      method: 'bank_transfer',
      bank_transfer: { account_number: number, amount: '5000.00', currency: 'NGN' },
    });
    expect(c).not.toHaveProperty('payment_link');
    expect(c.instruction).toContain(number);
    expect(c.instruction).toContain(c.bank_transfer.reference);

    await api.post(`/v1/simulations/accounts/${dest}/fund`, { amount: '4000.00', reference: c.bank_transfer.reference });
    expect((await api.get(`/v1/collections/${c.id}`)).body.data.status).toBe('pending');
    await api.post(`/v1/simulations/accounts/${dest}/fund`, { amount: '5000.00', reference: c.bank_transfer.reference });
    const done = (await api.get(`/v1/collections/${c.id}`)).body.data;
    expect(done).toMatchObject({ status: 'completed', fee: '75.00', net_amount: '4925.00' });
    expect(await acct(dest)).toMatchObject({ balance: '8925.00' });
    await api.post(`/v1/simulations/accounts/${dest}/fund`, { amount: '5000.00', reference: c.bank_transfer.reference });
    expect(await acct(dest)).toMatchObject({ balance: '13925.00' });
    expect(await eventsOf(c.id)).toEqual(['collection.status.pending', 'collection.status.completed']);
    await reconciled();
  });

  it('collects into the business account without a fee', async () => {
    const own = await account('NGN', null);
    const c = (await api.post('/v1/collections', collection(own, ['bank_transfer'], { currency: 'NGN' }))).body.data;
    expect((await api.post(`/v1/simulations/collections/${c.id}/complete`)).body.data).toMatchObject({ status: 'completed', fee: '0.00' });
    expect(await acct(own)).toMatchObject({ balance: '50.00' });
    await reconciled();
  });
});

describe('mobile money collections', () => {
  it('the payer approves or declines the prompt', async () => {
    const dest = await account('USD');
    expect((await api.post('/v1/collections', collection(dest, ['mobile_money']))).status).toBe(400);
    const wrongCountry = await api.post(
      '/v1/collections',
      collection(dest, ['mobile_money'], { source: { source_type: 'external', methods: ['mobile_money'], phone_number: '+233241234567' } }),
    );
    expect(wrongCountry.status).toBe(400);
    expect(wrongCountry.body.error.details[0].field).toBe('source.phone_number');
    const body = collection(dest, ['mobile_money'], {
      country: 'GH',
      source: { source_type: 'external', methods: ['mobile_money'], phone_number: '+233241234567' },
    });
    const a = (await api.post('/v1/collections', body)).body.data;
    expect(a.instruction).toContain('+233241234567');
    expect((await api.post(`/v1/simulations/collections/${a.id}/complete`, {})).body.data.status).toBe('completed');
    const b = (await api.post('/v1/collections', body)).body.data;
    const failed = await api.post(`/v1/simulations/collections/${b.id}/fail`, { reason: 'Wrong PIN' });
    expect(failed.body.data).toMatchObject({ status: 'failed', failure_reason: 'Wrong PIN' });
    expect((await api.post(`/v1/simulations/collections/${b.id}/complete`)).status).toBe(409);
    expect(await acct(dest)).toMatchObject({ balance: '49.25' });
    await reconciled();
  });
});

describe('expiry', () => {
  it('expires unpaid collections by job or simulation', async () => {
    const dest = await account('USD');
    const a = (await api.post('/v1/collections', collection(dest, ['card']))).body.data;
    const b = (await api.post('/v1/collections', collection(dest, ['card']))).body.data;
    await t.db
      .updateTable('collections')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', a.id)
      .execute();
    await t.db.transaction().execute((trx) => expireDueCollections(trx, { config: t.config, sealer: t.sealer, baseUrl: '' }));
    expect((await api.get(`/v1/collections/${a.id}`)).body.data).toMatchObject({ status: 'expired', detailed_status: 'expired' });
    expect((await api.get(`/v1/collections/${b.id}`)).body.data.status).toBe('pending');
    expect((await checkout(a.payment_link, { card_number: '4242424242424242' })).status).toBe(409);
    expect((await api.post(`/v1/simulations/collections/${b.id}/expire`)).body.data.status).toBe('expired');
    expect(await eventsOf(a.id)).toEqual(['collection.status.pending', 'collection.status.expired']);
  });
});

describe('access and errors', () => {
  it('GET /v1/collections/{id} needs an API key and 404s for other businesses and environments', async () => {
    const dest = await account('USD');
    const c = (await api.post('/v1/collections', collection(dest, ['card']))).body.data;
    const anon = await t.request('GET', `/v1/collections/${c.id}`);
    expect(anon.status).toBe(401);
    expect((await other.get(`/v1/collections/${c.id}`)).status).toBe(404);
    expect((await live.get(`/v1/collections/${c.id}`)).status).toBe(404);
    expect((await live.post(`/v1/simulations/collections/${c.id}/complete`)).status).toBe(404);
    expect((await other.post(`/v1/simulations/collections/${c.id}/complete`)).status).toBe(404);
    const list = await api.get('/v1/collections?status=pending&method=card&items_per_page=2');
    expect(list.body.data.items).toHaveLength(2);
    expect((await api.get('/v1/collections?status=created')).status).toBe(400);
  });

  it('rejects bad requests with their codes and changes nothing', async () => {
    const dest = await account('USD');
    const cases: [Record<string, unknown>, number, string][] = [
      [collection(dest, ['card'], { currency: 'NGN' }), 422, 'currency_mismatch'],
      [collection('0190a5b0-0000-7000-8000-000000000000', ['card']), 404, 'not_found'],
      [collection(dest, ['card'], { customer_id: '0190a5b0-0000-7000-8000-000000000000' }), 404, 'not_found'],
      [collection(dest, ['pix']), 400, 'validation_failed'],
      [
        collection(dest, ['card'], {
          destination: { destination_type: 'external_crypto_wallet', wallet_address: '0x1', network: 'polygon' },
        }),
        400,
        'validation_failed',
      ],
      [collection(dest, ['card'], { amount: '1.001' }), 400, 'invalid_amount'],
      [collection(dest, ['card'], { amount: 0 }), 400, 'invalid_amount'],
      [collection(dest, ['card'], { colour: 'red' }), 400, 'validation_failed'],
      [collection(dest, ['card'], { country: 'XX' }), 400, 'validation_failed'],
    ];
    for (const [body, status, code] of cases) {
      const res = await api.post('/v1/collections', body);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.error.code).toBe(code);
    }
    expect((await api.get(`/v1/collections?customer_id=${customerId}&status=pending`)).status).toBe(200);
  });
});

describe('races', () => {
  it('concurrent outcomes for one collection: exactly one wins, the money moves once', async () => {
    const dest = await account('USD');
    const c = (await api.post('/v1/collections', collection(dest, ['card']))).body.data;
    const results = await Promise.all([
      api.post(`/v1/simulations/collections/${c.id}/complete`),
      api.post(`/v1/simulations/collections/${c.id}/fail`),
      checkout(c.payment_link, { card_number: '4242424242424242' }),
      api.post(`/v1/simulations/collections/${c.id}/expire`),
    ]);
    expect(results.filter((r) => r.status === 200).length).toBe(1);
    expect(results.every((r) => r.status === 200 || r.status === 409)).toBe(true);
    const final = (await api.get(`/v1/collections/${c.id}`)).body.data.status;
    expect(await acct(dest)).toMatchObject({ balance: final === 'completed' ? '49.25' : '0.00' });
    expect((await eventsOf(c.id)).length).toBe(2);
    await reconciled();
  });
});

describe('secrets at rest', () => {
  it('keeps the checkout session out of events and stored idempotent responses', async () => {
    const dest = await account('USD');
    const res = await api.post('/v1/collections', collection(dest, ['card']), { idempotencyKey: `col-${dest}` });
    const session = new URL(res.body.data.payment_link).searchParams.get('session')!;
    const replay = await api.post('/v1/collections', collection(dest, ['card']), { idempotencyKey: `col-${dest}` });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body.data.payment_link).toBe(res.body.data.payment_link);
    const text = (rows: unknown) => JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    const stored = text(await t.db.selectFrom('idempotency_keys').selectAll().execute());
    const events = text(await t.db.selectFrom('events').selectAll().execute());
    const rows = text(await t.db.selectFrom('collections').selectAll().execute());
    for (const dump of [stored, events, rows]) expect(dump).not.toContain(session);
  });
});
