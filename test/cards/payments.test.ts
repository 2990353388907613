import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptEnvelope, rsaKeyPair } from '../card-crypto.js';
import { cardholder } from '../card-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { enableAccountCurrency } from '../kyc-helpers.js';
import { reconcile } from '../../src/ledger/index.js';
import { setSettings, type CreatedTenant } from '../../src/modules/tenants/service.js';
import { expireDue } from '../../src/modules/cards/payments.js';
import { isLuhnValid } from '../../src/modules/cards/secrets.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;

/** A customer with a funded USD account and a virtual card (limits off unless asked). */
async function setup(options: { fund?: string; card?: Record<string, unknown>; client?: Client } = {}) {
  const client = options.client ?? api;
  const customer = await cardholder(client, { physical: true });
  const account = (await client.post('/v1/accounts', { currency: 'USD', label: 'Main', customer_id: customer })).body.data;
  expect(account.id).toBeTruthy();
  await client.post(`/v1/simulations/accounts/${account.id}/fund`, { amount: options.fund ?? '1000.00' });
  const res = await client.post('/v1/cards', {
    customer_id: customer,
    card_type: 'virtual',
    card_limit: 10000,
    name_on_card: 'John Doe',
    ...options.card,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { customer, account: account.id as string, card: res.body.data.card };
}

async function fundCard(cardId: string, accountId: string, amount: string | number, client = api) {
  return client.post('/v1/transfer', {
    source: { source_type: 'internal_account', id: accountId },
    destination: { destination_type: 'card', id: cardId },
    amount,
    client_reference: `fund-${cardId.slice(-6)}-${Math.random()}`,
  });
}

const authorize = (cardId: string, body: Record<string, unknown>, client = api) =>
  client.post(`/v1/simulations/cards/${cardId}/authorizations`, { merchant_name: 'Coffee Shop', ...body });
const balanceOf = async (cardId: string) => (await api.get(`/v1/cards/${cardId}/balance`)).body.data;
const accountBalance = async (id: string) => (await api.get(`/v1/accounts/${id}`)).body.data;
const eventTypes = async (groupId: string) =>
  (await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', groupId).orderBy('id').execute()).map(
    (e) => e.event_type,
  );

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant();
  api = clientFor(t, biz.sandbox.secret_key);
});
afterAll(() => t.close());

describe('the whole card journey', () => {
  it('gets a card, funds it, pays (approved and declined), shows transactions, freezes, reads details encrypted', async () => {
    const { account, card } = await setup();
    const funded = await fundCard(card.id, account, '100.00');
    expect(funded.status, JSON.stringify(funded.body)).toBe(200);
    expect(funded.body.data).toMatchObject({
      transfer_status: 'completed',
      destination: { destination_type: 'card', id: card.id },
      amount: '100.00',
      currency: 'USD',
    });
    expect(await balanceOf(card.id)).toMatchObject({ balance: '100.00', available_balance: '100.00' });
    expect((await accountBalance(account)).balance).toBe('900.00');

    const ok = await authorize(card.id, { amount: '25.50', merchant_category: '5411' });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({
      status: 'approved',
      amount: '25.50',
      decline_reason: null,
      merchant_name: 'Coffee Shop',
      merchant_category: '5411',
    });
    expect(await balanceOf(card.id)).toMatchObject({ balance: '100.00', available_balance: '74.50' });

    const declined = await authorize(card.id, { amount: '80.00' });
    expect(declined.body.data).toMatchObject({ status: 'declined', decline_reason: 'insufficient_funds' });
    expect(await balanceOf(card.id)).toMatchObject({ available_balance: '74.50' });

    const captured = await api.post(`/v1/simulations/card-authorizations/${ok.body.data.id}/capture`, {});
    expect(captured.body.data).toMatchObject({ status: 'captured', captured_amount: '25.50' });
    expect(await balanceOf(card.id)).toMatchObject({ balance: '74.50', available_balance: '74.50' });

    const txs = (await api.get(`/v1/transactions?card_id=${card.id}`)).body.data;
    const summary = txs.items.map((x: Record<string, unknown>) => [
      x.account_id === card.id,
      x.transaction_type,
      x.direction,
      x.amount,
      x.status,
    ]);
    expect(summary).toEqual([
      [true, 'card_payment', 'out', '25.50', 'completed'],
      [true, 'card_payment', 'out', '80.00', 'failed'],
      [true, 'card_funding', 'in', '100.00', 'completed'],
      [false, 'card_funding', 'out', '100.00', 'completed'],
    ]);
    expect(txs.items[0]).toMatchObject({ balance_before: '100.00', balance_after: '74.50', channel: 'card_payment' });
    expect(txs.items[1].metadata).toMatchObject({ declined_reason: 'insufficient_funds', merchant_name: 'Coffee Shop' });
    expect((await api.get(`/v1/transactions?account_id=${card.id}&transaction_type=card_payment`)).body.data.total_items).toBe(2);

    expect((await api.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' })).body.data.status).toBe('freeze');
    expect((await authorize(card.id, { amount: 1 })).body.data).toMatchObject({ status: 'declined', decline_reason: 'card_frozen' });

    const keys = rsaKeyPair();
    const details = await api.get(`/v1/cards/${card.id}/sensitive-details`, { headers: { 'x-client-public-key': keys.header } });
    expect(isLuhnValid(decryptEnvelope(keys.privateKey, details.body.data).card_number)).toBe(true);

    expect(await eventTypes(card.id)).toEqual([
      'cards.status.update',
      'cards.transaction.funding',
      'cards.transaction.payment',
      'cards.transaction.declined',
      'cards.transaction.payment',
      'cards.status.update',
      'cards.transaction.declined',
    ]);
    expect((await reconcile(t.db, biz.tenant_id)).ok).toBe(true);
  });
});

describe('funding through POST /v1/transfer', () => {
  it('refuses what cannot fund a card, changing nothing', async () => {
    const { account, card, customer } = await setup({ fund: '50.00' });
    const other = await setup();
    await enableAccountCurrency(api, customer, 'EUR');
    const eur = (await api.post('/v1/accounts', { currency: 'EUR', label: 'EUR', customer_id: customer })).body.data.id;
    const cases: [string, () => Promise<{ status: number; body: { error: { code: string } } }>, number, string][] = [
      ['insufficient funds', () => fundCard(card.id, account, '50.01'), 422, 'insufficient_funds'],
      ['unknown card', () => fundCard('0190a000-0000-7000-8000-000000000000', account, 1), 404, 'not_found'],
      ["another customer's card", () => fundCard(other.card.id, account, 1), 400, 'validation_failed'],
      ['currency mismatch', () => fundCard(card.id, eur, 1), 422, 'currency_mismatch'],
      ['bad amount', () => fundCard(card.id, account, '1.001'), 400, 'invalid_amount'],
    ];
    for (const [name, run, status, code] of cases) {
      const res = await run();
      expect(res.status, name).toBe(status);
      expect(res.body.error.code, name).toBe(code);
    }
    const stranger = clientFor(t, (await t.tenant()).sandbox.secret_key);
    const theirs = await setup({ client: stranger });
    expect((await fundCard(card.id, theirs.account, 1, stranger)).status).toBe(404);
    expect(await balanceOf(card.id)).toMatchObject({ balance: '0.00' });
    expect((await accountBalance(account)).balance).toBe('50.00');
    await api.patch(`/v1/cards/${card.id}/update`, { status: 'stolen' });
    const blocked = await fundCard(card.id, account, 1);
    expect(blocked.status).toBe(409);
    expect(blocked.body.error.code).toBe('card_blocked');
  });

  it('charges a configured card_funding fee to the business account', async () => {
    const feeTenant = await t.tenant();
    const client = clientFor(t, feeTenant.sandbox.secret_key);
    await setSettings(t.db, feeTenant.tenant_id, { fees: { card_funding: { USD: { flat: '0.50', bps: 100 } } } });
    const { account, card } = await setup({ client });
    const res = await fundCard(card.id, account, '20.00', client);
    expect(res.body.data).toMatchObject({ amount: '20.00', fee: '0.70' });
    expect((await client.get(`/v1/cards/${card.id}/balance`)).body.data.balance).toBe('20.00');
    expect((await client.get(`/v1/accounts/${account}`)).body.data.balance).toBe('979.30');
    const fees = (await client.get('/v1/transactions?transaction_type=fee_charge')).body.data.items;
    expect(fees.map((f: { amount: string }) => f.amount)).toEqual(['0.70']);
    expect((await reconcile(t.db, feeTenant.tenant_id)).ok).toBe(true);
  });

  it('funds frozen and inactive cards (they cannot spend, but may hold money)', async () => {
    const { account, customer } = await setup();
    const physical = (
      await api.post('/v1/cards', {
        customer_id: customer,
        card_type: 'physical',
        card_limit: 10,
        name_on_card: 'John Doe',
        shipping_address: {
          address_line1: '1 A St',
          city: 'Austin',
          postal_code: '73301',
          country_code: 'US',
          phone_number: '+15125550100',
          method: 'express',
        },
      })
    ).body.data.card;
    expect((await fundCard(physical.id, account, 5)).status).toBe(200);
    expect((await authorize(physical.id, { amount: 1 })).body.data.decline_reason).toBe('card_inactive');
  });
});

describe('authorizations', () => {
  it.each([['insufficient_funds'], ['card_frozen'], ['limit_exceeded'], ['merchant_category_blocked'], ['card_expired'], ['do_not_honor']])(
    'declines when the network forces %s, holding nothing',
    async (reason) => {
      const { account, card } = await setup();
      await fundCard(card.id, account, 10);
      const res = await authorize(card.id, { amount: 1, decline_reason: reason });
      expect(res.body.data).toMatchObject({ status: 'declined', decline_reason: reason });
      expect(await balanceOf(card.id)).toMatchObject({ available_balance: '10.00' });
    },
  );

  it('declines on the card itself: expired, blocked, frozen, inactive', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 10);
    await t.db.updateTable('cards').set({ expiry_year: 2020 }).where('id', '=', card.id).execute();
    expect((await authorize(card.id, { amount: 1 })).body.data.decline_reason).toBe('card_expired');
    await api.patch(`/v1/cards/${card.id}/update`, { status: 'freeze' });
    expect((await authorize(card.id, { amount: 1 })).body.data.decline_reason).toBe('card_frozen');
    const reactivate = await api.patch(`/v1/cards/${card.id}/update`, { status: 'active' });
    expect(reactivate.status).toBe(409);
    expect(reactivate.body.error.code).toBe('invalid_state_transition');
    await api.patch(`/v1/cards/${card.id}/update`, { status: 'lost' });
    expect((await authorize(card.id, { amount: 1 })).body.data.decline_reason).toBe('card_blocked');
    expect(await balanceOf(card.id)).toMatchObject({ available_balance: '10.00' });
  });

  it('declines on every spending control and approves within them', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 500);
    await api.patch(`/v1/cards/${card.id}/spending-controls`, {
      single_transaction_limit: 100,
      daily_transaction_limit: 150,
      monthly_transaction_limit: 180,
      blocked_merchant_categories: ['7995'],
    });
    const reason = async (body: Record<string, unknown>) => (await authorize(card.id, body)).body.data.decline_reason;
    expect(await reason({ amount: '100.01' })).toBe('limit_exceeded');
    expect(await reason({ amount: 5, merchant_category: '7995' })).toBe('merchant_category_blocked');
    expect(await reason({ amount: 100 })).toBeNull();
    expect(await reason({ amount: 50 })).toBeNull();
    expect(await reason({ amount: '0.01' })).toBe('limit_exceeded'); // daily 150 reached
    await api.patch(`/v1/cards/${card.id}/spending-controls`, { daily_transaction_limit: null });
    expect(await reason({ amount: 30 })).toBeNull();
    expect(await reason({ amount: '0.01' })).toBe('limit_exceeded'); // monthly 180 reached
    await api.patch(`/v1/cards/${card.id}/spending-controls`, {
      monthly_transaction_limit: null,
      allowed_merchant_categories: ['groceries'],
    });
    expect(await reason({ amount: 1 })).toBe('merchant_category_blocked');
    expect(await reason({ amount: 1, merchant_category: 'Groceries' })).toBeNull();
    await api.patch(`/v1/cards/${card.id}/spending-controls`, { activated: false });
    expect(await reason({ amount: 200, merchant_category: '7995' })).toBeNull();
  });

  it('counts a reversed authorization out of the daily limit and a partial capture at its captured amount', async () => {
    const { account, card } = await setup({ card: { card_limit: 100 } });
    await fundCard(card.id, account, 300);
    const a = (await authorize(card.id, { amount: 100 })).body.data;
    expect((await authorize(card.id, { amount: 1 })).body.data.decline_reason).toBe('limit_exceeded');
    await api.post(`/v1/simulations/card-authorizations/${a.id}/reverse`, {});
    const b = (await authorize(card.id, { amount: 100 })).body.data;
    expect(b.status).toBe('approved');
    await api.post(`/v1/simulations/card-authorizations/${b.id}/capture`, { amount: 60 });
    expect((await authorize(card.id, { amount: 40 })).body.data.status).toBe('approved');
    expect((await authorize(card.id, { amount: '0.01' })).body.data.decline_reason).toBe('limit_exceeded');
  });

  it('captures partly (the rest released), and settles each authorization at most once', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 100);
    const a = (await authorize(card.id, { amount: 40 })).body.data;
    const over = await api.post(`/v1/simulations/card-authorizations/${a.id}/capture`, { amount: '40.01' });
    expect(over.status).toBe(422);
    const part = await api.post(`/v1/simulations/card-authorizations/${a.id}/capture`, { amount: '15.25' });
    expect(part.body.data).toMatchObject({ status: 'captured', amount: '40.00', captured_amount: '15.25' });
    expect(await balanceOf(card.id)).toMatchObject({ balance: '84.75', available_balance: '84.75' });
    for (const action of ['capture', 'reverse']) {
      const again = await api.post(`/v1/simulations/card-authorizations/${a.id}/${action}`, {});
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('invalid_state_transition');
    }
    const b = (await authorize(card.id, { amount: 10 })).body.data;
    const partialReverse = await api.post(`/v1/simulations/card-authorizations/${b.id}/reverse`, { amount: 5 });
    expect(partialReverse.status).toBe(422);
    const reversed = await api.post(`/v1/simulations/card-authorizations/${b.id}/reverse`, { amount: 10 });
    expect(reversed.body.data.status).toBe('reversed');
    expect((await api.post(`/v1/simulations/card-authorizations/${b.id}/capture`, {})).status).toBe(409);
    const declined = (await authorize(card.id, { amount: 1, decline_reason: 'do_not_honor' })).body.data;
    expect((await api.post(`/v1/simulations/card-authorizations/${declined.id}/capture`, {})).status).toBe(409);
    expect(await balanceOf(card.id)).toMatchObject({ balance: '84.75', available_balance: '84.75' });
    const list = (await api.get(`/v1/cards/${card.id}/authorizations`)).body.data;
    expect(list.items.map((x: { status: string }) => x.status)).toEqual(['declined', 'reversed', 'captured']);
    expect((await api.get(`/v1/cards/${card.id}/authorizations?status=captured`)).body.data.total_items).toBe(1);
    expect((await api.get(`/v1/card-authorizations/${a.id}`)).body.data.captured_amount).toBe('15.25');
    expect((await reconcile(t.db, biz.tenant_id)).ok).toBe(true);
  });

  it('replays a retried authorization and capture without a second hold or post', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 50);
    const first = await authorize(card.id, { amount: 20 }, api);
    const key = `auth-${card.id}`;
    const a1 = await api.post(
      `/v1/simulations/cards/${card.id}/authorizations`,
      { amount: 20, merchant_name: 'Shop' },
      { idempotencyKey: key },
    );
    const a2 = await api.post(
      `/v1/simulations/cards/${card.id}/authorizations`,
      { amount: 20, merchant_name: 'Shop' },
      { idempotencyKey: key },
    );
    expect(a2.text).toBe(a1.text);
    expect(await balanceOf(card.id)).toMatchObject({ available_balance: '10.00' });
    const c1 = await api.post(
      `/v1/simulations/card-authorizations/${first.body.data.id}/capture`,
      {},
      { idempotencyKey: `cap-${card.id}` },
    );
    const c2 = await api.post(
      `/v1/simulations/card-authorizations/${first.body.data.id}/capture`,
      {},
      { idempotencyKey: `cap-${card.id}` },
    );
    expect(c2.headers['idempotency-replayed']).toBe('true');
    expect(c2.text).toBe(c1.text);
    expect(await balanceOf(card.id)).toMatchObject({ balance: '30.00', available_balance: '10.00' });
  });

  it('expires approved authorizations past their time (worker), releasing the hold', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 30);
    const a = (await authorize(card.id, { amount: 30 })).body.data;
    expect(a.expires_at).not.toBeNull();
    await t.db
      .updateTable('card_authorizations')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', a.id)
      .execute();
    await t.db.transaction().execute((trx) => expireDue(trx, 100, t.dbKind === 'postgres'));
    expect((await api.get(`/v1/card-authorizations/${a.id}`)).body.data.status).toBe('expired');
    expect(await balanceOf(card.id)).toMatchObject({ available_balance: '30.00' });
    expect((await api.post(`/v1/simulations/card-authorizations/${a.id}/capture`, {})).status).toBe(409);
  });

  it('validates the simulation and hides it from live and other businesses', async () => {
    const { card } = await setup();
    for (const body of [
      { amount: 0 },
      { amount: '1.001' },
      { amount: 1, merchant_name: '' },
      { amount: 1, decline_reason: 'bored' },
      { amount: 1, merchant_category: '12' },
      { amount: 1, tip: 2 },
    ]) {
      expect((await authorize(card.id, body)).status, JSON.stringify(body)).toBe(400);
    }
    const live = clientFor(t, biz.live.secret_key);
    expect((await authorize(card.id, { amount: 1 }, live)).status).toBe(404);
    const a = (await authorize(card.id, { amount: 1 })).body.data;
    expect((await live.post(`/v1/simulations/card-authorizations/${a.id}/capture`, {})).status).toBe(404);
    expect((await live.get(`/v1/card-authorizations/${a.id}`)).status).toBe(404);
    const stranger = clientFor(t, (await t.tenant()).sandbox.secret_key);
    expect((await authorize(card.id, { amount: 1 }, stranger)).status).toBe(404);
    expect((await stranger.post(`/v1/simulations/card-authorizations/${a.id}/reverse`, {})).status).toBe(404);
    expect((await stranger.get(`/v1/cards/${card.id}/authorizations`)).status).toBe(404);
  });
});

describe('concurrency (meaningful on PostgreSQL)', () => {
  it('never approves more than the card holds or its daily limit, under parallel authorizations', async () => {
    const { account, card } = await setup({ card: { card_limit: 1000 } });
    await fundCard(card.id, account, 100);
    await api.patch(`/v1/cards/${card.id}/spending-controls`, { daily_transaction_limit: 90 });
    const results = await Promise.all(Array.from({ length: 12 }, () => authorize(card.id, { amount: 15 })));
    const approved = results.filter((r) => r.body.data.status === 'approved');
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(approved).toHaveLength(6);
    expect(await balanceOf(card.id)).toMatchObject({ balance: '100.00', available_balance: '10.00' });
  });

  it('runs funding, withdrawals and authorizations of one card side by side without deadlock or lost money', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 100);
    const ops = Array.from({ length: 15 }, (_, i) =>
      i % 3 === 0
        ? fundCard(card.id, account, 5)
        : i % 3 === 1
          ? api.post('/v1/cards/withdraw', { card_id: card.id, amount: 5, account_id: account })
          : authorize(card.id, { amount: 5 }),
    );
    const results = await Promise.all(ops);
    expect(results.map((r) => r.status)).toEqual(Array(15).fill(200));
    expect(results.filter((r) => r.body.data.status === 'approved')).toHaveLength(5);
    expect(await balanceOf(card.id)).toMatchObject({ balance: '100.00', available_balance: '75.00' });
    expect((await accountBalance(account)).balance).toBe('900.00');
    expect((await reconcile(t.db, biz.tenant_id)).ok).toBe(true);
  });
});

describe('POST /v1/cards/withdraw', () => {
  it('moves available money back to the owner account, in any card status', async () => {
    const { account, card } = await setup();
    await fundCard(card.id, account, 100);
    await authorize(card.id, { amount: 30 });
    const tooMuch = await api.post('/v1/cards/withdraw', { card_id: card.id, amount: '70.01', account_id: account });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error.code).toBe('insufficient_funds');
    await api.patch(`/v1/cards/${card.id}/update`, { status: 'blocked' });
    const res = await api.post('/v1/cards/withdraw', { card_id: card.id, amount: 70 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ card_id: card.id, account_id: account, amount: '70.00', currency: 'USD', status: 'completed' });
    expect(await balanceOf(card.id)).toMatchObject({ balance: '30.00', available_balance: '0.00' });
    expect((await accountBalance(account)).balance).toBe('970.00');
    const tx = (await api.get(`/v1/transactions/${res.body.data.transaction_id}`)).body.data;
    expect(tx).toMatchObject({
      account_id: card.id,
      transaction_type: 'card_withdrawal',
      direction: 'out',
      amount: '70.00',
      balance_before: '100.00',
      balance_after: '30.00',
    });
    expect(await eventTypes(card.id)).toContain('cards.transaction.withdraw');
  });

  it("refuses other customers' accounts, other currencies, unknown cards and bad amounts", async () => {
    const { account, card, customer } = await setup();
    await fundCard(card.id, account, 10);
    const other = await setup();
    await enableAccountCurrency(api, customer, 'EUR');
    const eur = (await api.post('/v1/accounts', { currency: 'EUR', label: 'EUR', customer_id: customer })).body.data.id;
    const business = (await api.post('/v1/accounts', { currency: 'USD', label: 'Ops' })).body.data.id;
    const w = (body: Record<string, unknown>) => api.post('/v1/cards/withdraw', { card_id: card.id, amount: 1, ...body });
    expect((await w({ account_id: other.account })).status).toBe(400);
    expect((await w({ account_id: eur })).body.error.code).toBe('currency_mismatch');
    expect((await w({ card_id: other.card.id, account_id: account })).status).toBe(400);
    expect((await w({ card_id: '0190a000-0000-7000-8000-000000000000' })).status).toBe(404);
    expect((await w({ amount: -1 })).body.error.code).toBe('invalid_amount');
    expect((await w({ account_id: business })).status).toBe(200);
    const lonely = await cardholder(api);
    const card2 = (await api.post('/v1/cards', { customer_id: lonely, card_type: 'virtual', card_limit: 5, name_on_card: 'Lone Ly' })).body
      .data.card;
    const none = await api.post('/v1/cards/withdraw', { card_id: card2.id, amount: 1 });
    expect(none.status).toBe(400);
    expect(none.body.error.details[0].field).toBe('account_id');
    expect(await balanceOf(card.id)).toMatchObject({ balance: '9.00' });
  });
});
