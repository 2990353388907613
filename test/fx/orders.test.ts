import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { balances, eventsOf, newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/** Market and quoted orders, their errors, list/get and isolation. Limit orders: limit.test.ts. */
let t: TestApp;
let biz: CreatedTenant;
let api: Client;
let live: Client;
let other: Client;
let customer: string;
let usd: string;
let ngn: string;

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant('FX Orders Co');
  api = clientFor(t, biz.sandbox.secret_key);
  live = clientFor(t, biz.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
  customer = await newCustomer(api);
  usd = await openAccount(api, 'USD', customer, '1000.00');
  ngn = await openAccount(api, 'NGN', customer, '100000.00');
});
afterAll(async () => t?.close());

const sell = (amount: string, extra: Record<string, unknown> = {}) => ({
  customer_id: customer,
  order_type: 'market',
  pair: { base: 'USD', quote: 'NGN' },
  amount,
  side: 'sell',
  source_type: 'account',
  source_id: usd,
  destination_type: 'account',
  destination_id: ngn,
  ...extra,
});

describe('market orders', () => {
  it('sells at the current bid: both legs in one posting through the fx_position accounts', async () => {
    const before = [await balances(api, usd), await balances(api, ngn)];
    const res = await api.post('/v1/fx/orders', sell('10.00'));
    expect(res.status).toBe(200);
    const o = res.body.data;
    expect(o).toMatchObject({
      order_id: o.id,
      status: 'completed',
      order_type: 'market',
      side: 'sell',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '10.00',
      amount_currency: 'USD',
      converted_amount: '15422.50',
      converted_currency: 'NGN',
      rate: '1542.25',
      mid_rate: '1550.00',
      spread_bps: 50,
      fee: '0.00',
      fee_currency: 'USD',
      customer_id: customer,
      tenant_id: biz.tenant_id,
      target_rate: null,
    });
    expect(o.executed_at).not.toBeNull();
    expect(await balances(api, usd)).toEqual({ balance: '990.00', available: '990.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '115422.50', available: '115422.50' });
    expect(before[0]!.balance).toBe('1000.00');

    const row = await t.db.selectFrom('fx_orders').selectAll().where('id', '=', o.id).executeTakeFirstOrThrow();
    const entries = await t.db
      .selectFrom('ledger_entries')
      .innerJoin('ledger_accounts', 'ledger_accounts.id', 'ledger_entries.account_id')
      .select(['ledger_entries.account_id', 'ledger_entries.amount', 'ledger_entries.currency', 'ledger_accounts.system_role'])
      .where('transaction_id', '=', row.ledger_transaction_id!)
      .execute();
    expect(entries).toHaveLength(4);
    const legs = entries.map((e) => `${e.system_role ?? e.account_id}:${e.currency}:${e.amount}`).sort();
    expect(legs).toEqual([`${ngn}:NGN:1542250`, `${usd}:USD:-1000`, 'fx_position:NGN:-1542250', 'fx_position:USD:1000'].sort());
    const tx = await t.db
      .selectFrom('ledger_transactions')
      .select(['kind', 'metadata'])
      .where('id', '=', row.ledger_transaction_id!)
      .executeTakeFirstOrThrow();
    expect(tx.kind).toBe('fx');
    expect(tx.metadata).toMatchObject({ fx_order_id: o.id, rate: '1542.25', mid_rate: '1550.00', spread_bps: 50, fee: '0.00' });

    const sourceTx = await api.get(`/v1/transactions/${o.transaction_id}`);
    expect(sourceTx.status).toBe(200);
    expect(sourceTx.body.data).toMatchObject({ account_id: usd, direction: 'out', amount: '10.00', currency: 'USD', channel: 'swap' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.completed']);
  });

  it('buys at the current ask: the base bought is exact, the quote paid rounds up', async () => {
    const res = await api.post('/v1/fx/orders', sell('3.33', { side: 'buy', source_id: ngn, destination_id: usd }));
    expect(res.status).toBe(200);
    // ask 1557.75; 3.33 * 1557.75 = 5187.3075 NGN -> pays 5187.31
    expect(res.body.data).toMatchObject({
      status: 'completed',
      side: 'buy',
      amount: '3.33',
      converted_amount: '5187.31',
      rate: '1557.75',
      fee_currency: 'NGN',
    });
  });

  it('charges the business fee setting in the source currency to the business account', async () => {
    const tenant = await t.tenant('Fee Co');
    await t.db
      .updateTable('tenants')
      .set({ settings: JSON.stringify({ fx_fee_bps: 100, fx_spread_bps: 0 }) })
      .where('id', '=', tenant.tenant_id)
      .execute();
    const c = clientFor(t, tenant.sandbox.secret_key);
    const owner = await newCustomer(c);
    const from = await openAccount(c, 'USD', owner, '100.00');
    const to = await openAccount(c, 'NGN', owner);
    const res = await c.post('/v1/fx/orders', {
      customer_id: owner,
      order_type: 'market',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '10.01',
      source_id: from,
      destination_id: to,
    });
    expect(res.status).toBe(200);
    // fee = 1% of 10.01 = 0.1001 -> 0.11 (rounded up); no spread: 10.01 * 1550 = 15515.50
    expect(res.body.data).toMatchObject({ customer_id: owner, fee: '0.11', converted_amount: '15515.50', rate: '1550.00' });
    expect((await balances(c, from)).balance).toBe('89.88');
    const feeAccounts = (await c.get('/v1/accounts?currency=USD')).body.data.items.filter(
      (a: { customer_id: string | null }) => !a.customer_id,
    );
    expect(feeAccounts.map((a: { balance: string }) => a.balance)).toEqual(['0.11']);
    const tx = (await c.get(`/v1/transactions/${res.body.data.transaction_id}`)).body.data;
    expect(tx).toMatchObject({ amount: '10.01', fee: '0.11' });
  });

  it('lets the business convert between its own accounts without customer_id', async () => {
    const from = await openAccount(api, 'EUR', null, '50.00');
    const to = await openAccount(api, 'GBP', null);
    const res = await api.post('/v1/fx/orders', {
      order_type: 'market',
      pair: { base: 'EUR', quote: 'GBP' },
      amount: 50,
      source_id: from,
      destination_id: to,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'completed' });
    expect(res.body.data).not.toHaveProperty('customer_id');
    expect((await balances(api, from)).balance).toBe('0.00');
  });

  it('fails with 422 insufficient_funds and moves nothing', async () => {
    const poor = await openAccount(api, 'USD', customer, '5.00');
    const entriesBefore = await t.db
      .selectFrom('ledger_entries')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const ordersBefore = await t.db
      .selectFrom('fx_orders')
      .select((eb) => eb.fn.countAll().as('n'))
      .executeTakeFirstOrThrow();
    const res = await api.post('/v1/fx/orders', sell('5.01', { source_id: poor }));
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('insufficient_funds');
    expect(await balances(api, poor)).toEqual({ balance: '5.00', available: '5.00' });
    expect(
      await t.db
        .selectFrom('ledger_entries')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow(),
    ).toEqual(entriesBefore);
    expect(
      await t.db
        .selectFrom('fx_orders')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow(),
    ).toEqual(ordersBefore);
  });

  it('answers 422 currency_mismatch when the accounts do not match the pair and side', async () => {
    const eur = await openAccount(api, 'EUR', customer);
    const cases = [
      sell('1', { source_id: eur }),
      sell('1', { destination_id: eur }),
      sell('1', { side: 'buy' }), // a buy pays from the NGN account into the USD account
    ];
    for (const body of cases) {
      const res = await api.post('/v1/fx/orders', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.error.code).toBe('currency_mismatch');
    }
  });

  it('answers 409 account_frozen for a frozen source account', async () => {
    const frozen = await openAccount(api, 'USD', customer, '10.00');
    expect((await api.patch(`/v1/accounts/${frozen}/status`, { status: 'frozen' })).status).toBe(200);
    const res = await api.post('/v1/fx/orders', sell('1', { source_id: frozen }));
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('account_frozen');
  });

  it('validates the body with 400 and unknown ids with 404', async () => {
    const bad: [unknown, string][] = [
      [{ ...sell('1'), order_type: undefined }, 'order_type'],
      [{ ...sell('1'), pair: undefined }, 'pair'],
      [{ ...sell('1'), amount: undefined }, 'amount'],
      [sell('1', { order_type: 'limit' }), 'target_rate'],
      [sell('1', { target_rate: '1500' }), 'target_rate'],
      [sell('1', { order_type: 'stop' }), 'order_type'],
      [sell('1', { side: 'short' }), 'side'],
      [sell('1.001'), 'amount'],
      [sell('0'), 'amount'],
      [sell('1', { pair: { base: 'USD', quote: 'KWD' } }), 'pair.quote'],
      [sell('1', { pair: { base: 'USD', quote: 'USD' } }), 'pair.quote'],
      [sell('1', { destination_type: 'wallet' }), 'destination_type'],
      [sell('1', { destination_id: usd }), 'destination_id'],
      [sell('1', { source_id: 'nope' }), 'source_id'],
      [sell('1', { wallet: 'x' }), 'wallet'],
      [sell('1', { order_type: 'limit', target_rate: '-3' }), 'target_rate'],
      [sell('1', { order_type: 'limit', target_rate: '1e3' }), 'target_rate'],
      [sell('9999999999999.99'), 'amount'],
    ];
    for (const [body, field] of bad) {
      const res = await api.post('/v1/fx/orders', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(
        res.body.error.details.map((d: { field: string }) => d.field),
        JSON.stringify(body),
      ).toContain(field);
    }
    const stranger = await newCustomer(api);
    const notMine = await api.post('/v1/fx/orders', sell('1', { customer_id: stranger }));
    expect(notMine.status).toBe(400);
    expect(notMine.body.error.details.map((d: { field: string }) => d.field)).toEqual(['source_id', 'destination_id']);
    const business = await openAccount(api, 'NGN', null);
    expect((await api.post('/v1/fx/orders', sell('1', { customer_id: undefined, destination_id: business }))).status).toBe(400);
    const unknown = '0190e7a0-0000-7000-8000-000000000000';
    for (const body of [sell('1', { source_id: unknown }), sell('1', { destination_id: unknown }), sell('1', { customer_id: unknown })]) {
      const res = await api.post('/v1/fx/orders', body);
      expect(res.status, JSON.stringify(body)).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });
});

describe('quoted orders', () => {
  const quote = async (direction = 'SELL', amount = '20.00') =>
    (await api.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'NGN', amount, direction })).body.data;

  it('executes at the quoted rate even after the market moved, once', async () => {
    const q = await quote();
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1400' });
    const res = await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      quote_id: q.quote_id,
      rate: q.rate,
      converted_amount: q.to_currency_amount,
      amount: '20.00',
      side: 'sell',
      status: 'completed',
    });
    const again = await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('quote_used');
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1550' });
  });

  it('executes a BUY quote as a buy order and accepts repeated matching terms', async () => {
    const q = await quote('BUY', '2.00');
    const res = await api.post('/v1/fx/orders', {
      quote_id: q.quote_id,
      order_type: 'market',
      side: 'buy',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '2',
      source_id: ngn,
      destination_id: usd,
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ side: 'buy', amount: '2.00', converted_amount: q.to_currency_amount });
  });

  it('lets exactly one of several concurrent orders use a quote', async () => {
    const q = await quote('SELL', '1.00');
    const results = await Promise.all(
      Array.from({ length: 4 }, () => api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.error.code === 'quote_used')).toBe(true);
    const used = await api.get(`/v1/fx/orders?search=${q.quote_id}`);
    expect(used.body.data.total_items).toBe(1);
  });

  it('answers 409 quote_expired after expires_at', async () => {
    const q = await quote();
    await t.db
      .updateTable('fx_quotes')
      .set({ expires_at: new Date(Date.now() - 1000) } as never)
      .where('id', '=', q.quote_id)
      .execute();
    const res = await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('quote_expired');
  });

  it('leaves the quote usable when the order fails for lack of funds', async () => {
    const q = await quote('SELL', '50.00');
    const poor = await openAccount(api, 'USD', customer, '10.00');
    const failed = await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: poor, destination_id: ngn });
    expect(failed.status).toBe(422);
    await api.post(`/v1/simulations/accounts/${poor}/fund`, { amount: '40.00' });
    expect((await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: poor, destination_id: ngn })).status).toBe(200);
  });

  it('rejects terms that contradict the quote (400) and unknown or foreign quotes (404)', async () => {
    const q = await quote();
    const bad: [Record<string, unknown>, string][] = [
      [{ side: 'buy' }, 'side'],
      [{ amount: '19.99' }, 'amount'],
      [{ pair: { base: 'USD', quote: 'EUR' } }, 'pair'],
      [{ order_type: 'limit', target_rate: '1' }, 'order_type'],
    ];
    for (const [extra, field] of bad) {
      const res = await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn, ...extra });
      expect(res.status, field).toBe(400);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    const foreign = (await other.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'NGN', amount: '1', direction: 'SELL' })).body
      .data;
    const res = await api.post('/v1/fx/orders', { quote_id: foreign.quote_id, source_id: usd, destination_id: ngn });
    expect(res.status).toBe(404);
    expect(res.body.error.details[0].field).toBe('quote_id');
    expect((await live.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn })).status).toBe(404);
    expect((await api.post('/v1/fx/orders', { quote_id: q.quote_id, source_id: usd, destination_id: ngn })).status).toBe(200);
  });
});

describe('list, get, isolation', () => {
  it('lists newest first with filters, pages and cursors', async () => {
    const all = await api.get('/v1/fx/orders?items_per_page=2');
    expect(all.status).toBe(200);
    expect(all.body.data.items).toHaveLength(2);
    expect(all.body.data.total_items).toBeGreaterThan(3);
    const ids = all.body.data.items.map((o: { id: string }) => o.id);
    expect([...ids].sort().reverse()).toEqual(ids);
    const next = await api.get(`/v1/fx/orders?items_per_page=2&cursor=${all.body.data.next_cursor}`);
    expect(next.body.data.items[0].id < ids[1]).toBe(true);
    const buys = (await api.get('/v1/fx/orders?side=buy')).body.data.items;
    expect(buys.length).toBeGreaterThan(0);
    expect(buys.every((o: { side: string }) => o.side === 'buy')).toBe(true);
    expect((await api.get('/v1/fx/orders?status=pending')).body.data.items).toEqual([]);
    const mine = (await api.get(`/v1/fx/orders?customer_id=${customer}&order_type=market`)).body.data;
    expect(mine.total_items).toBe(all.body.data.total_items - 1); // one order is the business's own
    expect(mine.items.every((o: { customer_id: string }) => o.customer_id === customer)).toBe(true);
    const byAccount = (await api.get(`/v1/fx/orders?account_id=${usd}`)).body.data.items;
    expect(byAccount.every((o: { source_id: string; destination_id: string }) => o.source_id === usd || o.destination_id === usd)).toBe(
      true,
    );
    expect((await api.get(`/v1/fx/orders?search=${ids[0]}`)).body.data.items.map((o: { id: string }) => o.id)).toEqual([ids[0]]);
    expect((await api.get('/v1/fx/orders?search=OTC-0VA89I')).body.data.items).toEqual([]);
    // waiting_approval is a real status (approvals on, docs/api-rules.md#closed-lists); none here with approvals off.
    expect((await api.get('/v1/fx/orders?status=waiting_approval')).body.data.items).toEqual([]);
    for (const q of ['status=on_hold', 'side=up', 'customer_id=x', 'from=yesterday', 'items_per_page=101', 'foo=1']) {
      expect((await api.get(`/v1/fx/orders?${q}`)).status, q).toBe(400);
    }
    expect((await api.get('/v1/fx/orders/pending-approvals')).body.data).toMatchObject({ items: [], total_items: 0 });
  });

  it('gets one order; another business or environment gets 404', async () => {
    const [first] = (await api.get('/v1/fx/orders?items_per_page=1')).body.data.items;
    expect((await api.get(`/v1/fx/orders/${first.id}`)).body.data).toEqual(first);
    for (const client of [other, live]) {
      expect((await client.get(`/v1/fx/orders/${first.id}`)).status).toBe(404);
      expect((await client.post(`/v1/fx/orders/${first.id}/cancel`)).status).toBe(404);
      expect((await client.get('/v1/fx/orders')).body.data.items).toEqual([]);
      const res = await client.post('/v1/fx/orders', sell('1'));
      expect(res.status).toBe(404);
    }
    expect((await api.get('/v1/fx/orders/not-a-uuid')).status).toBe(400);
    expect((await api.get('/v1/fx/orders/0190e7a0-0000-7000-8000-000000000000')).status).toBe(404);
  });

  it('keeps the ledger reconciled', async () => {
    const report = await reconcile(t.db, biz.tenant_id);
    expect(report.ok, JSON.stringify(report)).toBe(true);
  });
});
