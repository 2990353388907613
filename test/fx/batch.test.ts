import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusinessSettings } from '../../src/core/settings.js';
import { reconcile } from '../../src/ledger/index.js';
import { orderBatch, type OrderRequest } from '../../src/modules/fx/batch.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { balances, newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp, countStatements, batchSizes } from '../harness.js';

/**
 * FX market orders on the batch path (docs/money-path.md): many orders in one transaction with a
 * fixed number of statements, each decided on its own in arrival order. Before, every order was
 * its own transaction of about 20 statements, and every one of them updated the same two
 * fx_position balance rows, so concurrent orders queued on those rows one by one (the benchmark's
 * fx row: 142 orders/s, 0.09× the transfers).
 */
let t: TestApp;
beforeAll(async () => {
  // One lane: while it is busy new orders queue, so concurrent requests form batches.
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1 });
});
afterAll(async () => t?.close());

const contextOf = (tenantId: string, settings: BusinessSettings = {}) => ({
  tenantId,
  environment: 'sandbox' as const,
  keyKind: 'secret' as const,
  requestId: 'r',
  settings,
});

async function business(name: string) {
  const tenant = await t.tenant(name);
  const api = clientFor(t, tenant.sandbox.secret_key);
  const req = (body: Record<string, unknown>): OrderRequest => ({
    ctx: contextOf(tenant.tenant_id),
    config: t.config,
    body: body as never,
  });
  return { tenant, api, req };
}

const sell = (source: string, destination: string, amount: string, extra: Record<string, unknown> = {}) => ({
  order_type: 'market',
  side: 'sell',
  pair: { base: 'USD', quote: 'NGN' },
  amount,
  source_id: source,
  destination_id: destination,
  ...extra,
});

const minor = async (api: Client, id: string) => BigInt((await balances(api, id)).balance.replace('.', ''));

describe('FX orders in batches', () => {
  it('costs the same statements for one order as for fifty', async () => {
    const b = await business('FX Statements Ltd');
    const usd = await openAccount(b.api, 'USD', null, '1000.00');
    const ngn = await openAccount(b.api, 'NGN', null);
    const statements = async (reqs: OrderRequest[]) => {
      const { count, result: outcomes } = await countStatements(t.db, (trx) => orderBatch(trx, reqs));
      expect(outcomes.every((o) => o.ok)).toBe(true);
      return count;
    };
    // The first order finds no fx_position accounts yet: it creates them with its writes.
    await statements([b.req(sell(usd, ngn, '1.00'))]);
    const one = await statements([b.req(sell(usd, ngn, '1.00'))]);
    const fifty = await statements(Array.from({ length: 50 }, () => b.req(sell(usd, ngn, '1.00'))));
    // The sandbox rates, accounts (share lock), the fx_position accounts, balance rows (their locks,
    // then the rows, the positions' found by the statements themselves), sent in one round trip
    // (planFirstLocks); and one
    // statement for every write: balances, ledger transactions and entries, account transactions,
    // orders, events. Before, the two fx_position accounts were a statement each, after the
    // accounts' answer, and the balance rows after theirs.
    expect(one).toBe(6);
    expect(fifty).toBe(one);
    // With a fee, the Fees account is found once the orders are priced: the statements follow each other.
    const feeCtx = { ...b.req({}).ctx, settings: { fx_fee_bps: 10 } };
    const withFee = await statements([{ ...b.req(sell(usd, ngn, '1.00')), ctx: feeCtx }]);
    expect(withFee).toBeGreaterThan(one);
    expect(await minor(b.api, usd)).toBe(100000n - 53n * 100n);
    expect((await reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });

  it("one order's refusal (funds, unknown account, used quote) never fails its neighbours", async () => {
    const { tenant, api, req } = await business('FX Neighbours Ltd');
    const customer = await newCustomer(api);
    const rich = await openAccount(api, 'USD', customer, '100.00');
    const poor = await openAccount(api, 'USD', customer, '5.00');
    const ngn = await openAccount(api, 'NGN', customer);
    const quote = (await api.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'NGN', amount: '10.00', direction: 'SELL' })).body
      .data;
    const unknown = '0190e7a0-0000-7000-8000-000000000000';
    const reqs = [
      req(sell(rich, ngn, '10.00', { customer_id: customer })),
      // The quote's first order lacks the funds: the quote stays usable for the next one.
      req({ quote_id: quote.quote_id, source_id: poor, destination_id: ngn, customer_id: customer }),
      req(sell(unknown, ngn, '1.00')),
      req({ quote_id: quote.quote_id, source_id: rich, destination_id: ngn, customer_id: customer }),
      req({ quote_id: quote.quote_id, source_id: rich, destination_id: ngn, customer_id: customer }),
      req(sell(poor, ngn, '5.00', { customer_id: customer })),
      req(sell(poor, ngn, '0.01', { customer_id: customer })),
    ];
    const outcomes = await t.db.transaction().execute((trx) => orderBatch(trx, reqs));
    const codes = outcomes.map((o) => (o.ok ? 'ok' : o.error.code));
    expect(codes).toEqual(['ok', 'insufficient_funds', 'not_found', 'ok', 'quote_used', 'ok', 'insufficient_funds']);
    expect(await minor(api, rich)).toBe(10000n - 1000n - 1000n);
    expect(await minor(api, poor)).toBe(0n);
    const done = outcomes.flatMap((o) => (o.ok ? [o.data] : []));
    expect(done.map((o) => o.quote_id ?? null)).toEqual([null, quote.quote_id, null]);
    expect(BigInt((await balances(api, ngn)).balance.replace('.', ''))).toBe(
      done.reduce((sum, o) => sum + BigInt(o.converted_amount!.replace('.', '')), 0n),
    );
    // Each executed order reads back as it was answered, and its event was committed with it.
    for (const o of done) expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data).toEqual(o);
    const events = await t.db.selectFrom('events').select('event_group_id').where('event_type', '=', 'fx.order.completed').execute();
    expect(done.every((o) => events.some((e) => e.event_group_id === o.id))).toBe(true);
    expect((await reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('planned ahead (market orders naming their accounts), a refusal still never fails its neighbours', async () => {
    const { tenant, api, req } = await business('FX Planned Neighbours Ltd');
    const rich = await openAccount(api, 'USD', null, '100.00');
    const poor = await openAccount(api, 'USD', null, '5.00');
    const ngn = await openAccount(api, 'NGN', null);
    const other = await business('FX Planned Stranger Ltd');
    const theirs = await openAccount(other.api, 'USD', null, '100.00');
    const reqs = [
      req(sell(rich, ngn, '10.00')),
      req(sell(poor, ngn, '6.00')),
      // Another business's account is locked ahead with the rest, and still not found here.
      req(sell(theirs, ngn, '1.00')),
      req(sell(ngn, rich, '1000000.00', { pair: { base: 'NGN', quote: 'USD' } })),
      req(sell(poor, ngn, '5.00')),
    ];
    const outcomes = await t.db.transaction().execute((trx) => orderBatch(trx, reqs));
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual([
      'ok',
      'insufficient_funds',
      'not_found',
      'insufficient_funds',
      'ok',
    ]);
    expect(await minor(api, rich)).toBe(10000n - 1000n);
    expect(await minor(api, poor)).toBe(0n);
    expect(await minor(other.api, theirs)).toBe(10000n);
    expect((await reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('a refused order leaves nothing behind, even the fx_position account it was the first to need', async () => {
    const { tenant, api, req } = await business('FX First Touch Ltd');
    const poor = await openAccount(api, 'USD', null, '1.00');
    const rich = await openAccount(api, 'USD', null, '100.00');
    const ngn = await openAccount(api, 'NGN', null);
    const positions = () =>
      t.db
        .selectFrom('ledger_accounts')
        .innerJoin('ledger_balances', 'ledger_balances.account_id', 'ledger_accounts.id')
        .select(['ledger_accounts.currency', 'ledger_balances.posted'])
        .where('ledger_accounts.tenant_id', '=', tenant.tenant_id)
        .where('ledger_accounts.system_role', '=', 'fx_position')
        .orderBy('ledger_accounts.currency')
        .execute();
    const refused = await t.db.transaction().execute((trx) => orderBatch(trx, [req(sell(poor, ngn, '5.00'))]));
    expect(refused.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual(['insufficient_funds']);
    // Before: the batch created both fx_position accounts while it found the legs, and kept them.
    expect(await positions()).toEqual([]);
    const mixed = await t.db.transaction().execute((trx) => orderBatch(trx, [req(sell(poor, ngn, '5.00')), req(sell(rich, ngn, '10.00'))]));
    expect(mixed.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual(['insufficient_funds', 'ok']);
    const received = BigInt(mixed[1]!.ok ? mixed[1]!.data.converted_amount!.replace('.', '') : '0');
    expect(await positions()).toEqual([
      { currency: 'NGN', posted: -received },
      { currency: 'USD', posted: 1000n },
    ]);
    expect((await reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('concurrent orders over HTTP share batches; each is answered alone and replays byte for byte', async () => {
    const { tenant, api } = await business('FX Concurrent Ltd');
    await setSettings(t.db, tenant.tenant_id, { fx_fee_bps: 100 });
    // A customer's accounts: the fee goes to the business's own account.
    const customer = await newCustomer(api);
    const sources: string[] = [];
    for (let i = 0; i < 4; i++) sources.push(await openAccount(api, 'USD', customer, '20.00'));
    const poor = await openAccount(api, 'USD', customer, '1.00');
    const ngn = await openAccount(api, 'NGN', customer);
    const before = await batchSizes('fx_orders');
    const bodies = Array.from({ length: 30 }, (_, i) => sell(i % 6 === 5 ? poor : sources[i % 4]!, ngn, '2.00'));
    const keys = bodies.map((_, i) => `fx-concurrent-${i}-${tenant.tenant_id}`);
    const results = await Promise.all(bodies.map((b, i) => api.post('/v1/fx/orders', b, { idempotencyKey: keys[i]! })));
    const after = await batchSizes('fx_orders');
    expect(after.count - before.count).toBeLessThan(30);
    expect(after.sum - before.sum).toBe(30);
    results.forEach((r, i) => {
      if (bodies[i]!.source_id === poor) expect(r.body.error?.code, JSON.stringify(r.body)).toBe('insufficient_funds');
      else expect(r.status, JSON.stringify(r.body)).toBe(200);
    });
    const ok = results.filter((r) => r.status === 200);
    expect(ok.every((r) => r.body.data.fee === '0.02' && r.body.data.status === 'completed')).toBe(true);
    // 4 sources of 20.00, 25 orders of 2.00 + 0.02 fee among them.
    const spent = (await Promise.all(sources.map((s) => minor(api, s)))).reduce((a, b) => a + (2000n - b), 0n);
    expect(spent).toBe(BigInt(ok.length) * 202n);
    const replay = await api.post('/v1/fx/orders', bodies[0], { idempotencyKey: keys[0]! });
    expect(replay.text).toBe(results[0]!.text);
    const refused = await api.post('/v1/fx/orders', bodies[5], { idempotencyKey: keys[5]! });
    expect(refused.text).toBe(results[5]!.text);
    expect((await reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('creates no Fees account for a refused order: the first accepted fee creates it', async () => {
    const { tenant, api } = await business('FX Refused Fees Ltd');
    await setSettings(t.db, tenant.tenant_id, { fx_fee_bps: 100 });
    const customer = await newCustomer(api);
    const usd = await openAccount(api, 'USD', customer, '2.00');
    const ngn = await openAccount(api, 'NGN', customer);
    const businessUsd = async () =>
      (await api.get('/v1/accounts?currency=USD')).body.data.items.filter((x: { customer_id: string | null }) => !x.customer_id);
    const refused = await api.post('/v1/fx/orders', sell(usd, ngn, '2.00')); // 2.00 + 0.02 fee > 2.00
    expect(refused.body.error?.code).toBe('insufficient_funds');
    expect(await businessUsd()).toEqual([]);
    const ok = await api.post('/v1/fx/orders', sell(usd, ngn, '1.00'));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const own = await businessUsd();
    expect(own).toHaveLength(1);
    expect(own[0]).toMatchObject({ balance: '0.01', label: 'Fees' });
    expect((await reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });
});

describe('the first orders of a business, in two lanes at once', () => {
  it('create its fx_position accounts once: a batch that loses the race reruns its orders, and none fails', async () => {
    // Two lanes on PostgreSQL (PGlite has one): two batches can both find no fx_position account
    // and both create it; the unique index fails the later statement, and its orders rerun alone.
    const app = await startTestApp({ TRANSFER_BATCH_LANES: 2, TRANSFER_BATCH_SIZE: 4 });
    try {
      const tenant = await app.tenant('FX Race Ltd');
      const api = clientFor(app, tenant.sandbox.secret_key);
      const usd = await openAccount(api, 'USD', null, '100.00');
      const ngn = await openAccount(api, 'NGN', null);
      const results = await Promise.all(Array.from({ length: 24 }, () => api.post('/v1/fx/orders', sell(usd, ngn, '1.00'))));
      const refused = results.filter((r) => r.status !== 200).map((r) => r.body);
      expect(
        results.map((r) => r.status),
        JSON.stringify(refused),
      ).toEqual(results.map(() => 200));
      const positions = await app.db
        .selectFrom('ledger_accounts')
        .select('currency')
        .where('tenant_id', '=', tenant.tenant_id)
        .where('system_role', '=', 'fx_position')
        .execute();
      expect(positions.map((p) => p.currency).sort()).toEqual(['NGN', 'USD']);
      expect(await minor(api, usd)).toBe(10000n - 2400n);
      expect((await reconcile(app.db, tenant.tenant_id)).ok).toBe(true);
    } finally {
      await app.close();
    }
  });
});
