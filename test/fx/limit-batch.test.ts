import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { scanWaitingOrders, settleDue, settleDueOrders } from '../../src/modules/fx/worker.js';
import { balances, eventsOf, newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, countStatements, startTestApp, type Client, type TestApp } from '../harness.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

/**
 * Due limit orders settle together (fx/worker.ts settleDueOrders, docs/money-path.md): one
 * transaction and a fixed number of statements for one order or fifty, each order ending on its
 * own (executed, expired, rejected, or still waiting). Before, each due order was a transaction of
 * its own, and each of them updated the same fx_position balance rows.
 */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

/** A business with a customer holding funded USD and NGN accounts, and limit orders selling USD. */
async function setup(usdFunds = '1000.00') {
  const tenant = await t.tenant();
  const api = clientFor(t, tenant.sandbox.secret_key);
  const customer = await newCustomer(api);
  const usd = await openAccount(api, 'USD', customer, usdFunds);
  const ngn = await openAccount(api, 'NGN', customer, '20000.00');
  const sell = async (amount: string, target = '1600', source = usd) => {
    const res = await api.post('/v1/fx/orders', {
      customer_id: customer,
      order_type: 'limit',
      side: 'sell',
      pair: { base: 'USD', quote: 'NGN' },
      amount,
      target_rate: target,
      source_id: source,
      destination_id: ngn,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.id as string;
  };
  return { api, customer, usd, ngn, sell };
}

const rate = (api: Client, value: string) => api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: value });
const statusOf = async (api: Client, id: string) => (await api.get(`/v1/fx/orders/${id}`)).body.data;

/** The orders due now (as the worker's scan finds them), settled together and counted. */
async function settleTogether(ids: string[]) {
  const { due, alone } = await scanWaitingOrders(t.db, new Date(Date.now() + 60_000), 1000);
  expect(alone).toEqual([]);
  const mine = due.filter((id) => ids.includes(id));
  return countStatements(t.db, (trx) => settleDueOrders(trx, mine));
}

describe('due limit orders settle together', () => {
  it('costs the same statements for one order as for fifty, and books each as alone', async () => {
    const { api, usd, ngn, sell } = await setup();
    const one = [await sell('1.00')];
    const fifty: string[] = [];
    for (let i = 0; i < 50; i++) fifty.push(await sell('1.00'));
    expect(await balances(api, usd)).toEqual({ balance: '1000.00', available: '949.00' });
    await rate(api, '1700');

    const first = await settleTogether(one);
    const many = await settleTogether(fifty);
    // The orders (locked), the business's sandbox rates, accounts (share lock), holds (locked), the
    // two fx_position accounts, balance rows (locks, then rows), and one statement for every write: balances,
    // holds, ledger rows, account transactions, orders, events. Alone, an order was about 20.
    expect(first.count).toBe(9);
    expect(many.count).toBe(first.count);
    expect([...many.result.values()]).toEqual(fifty.map(() => 'completed'));

    // bid = 1700 * 0.995 = 1691.50 per USD
    expect(await balances(api, usd)).toEqual({ balance: '949.00', available: '949.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '106266.50', available: '106266.50' });
    const done = await statusOf(api, fifty[7]!);
    expect(done).toMatchObject({ status: 'completed', rate: '1691.50', converted_amount: '1691.50', fee: '0.00' });
    expect(done.executed_at).toBe(done.updated_at);
    expect(await eventsOf(t, fifty[7]!)).toEqual(['fx.order.completed']);
    // The event carries the order as the API serves it.
    const event = await t.db
      .selectFrom('events')
      .select(eventEnvelope().as('payload'))
      .where('event_group_id', '=', fifty[7]!)
      .executeTakeFirstOrThrow();
    expect(event.payload.event_data).toEqual(done);
    const holds = await t.db
      .selectFrom('ledger_holds')
      .select('status')
      .where('reference', 'in', [...one, ...fifty])
      .execute();
    expect(holds.map((h) => h.status)).toEqual([...one, ...fifty].map(() => 'voided'));
    const swaps = await t.db
      .selectFrom('transactions')
      .select('amount')
      .where('account_id', '=', usd)
      .where('channel', '=', 'swap')
      .execute();
    expect(swaps.map((x) => x.amount)).toEqual([...one, ...fifty].map(() => 100n));
  });

  it("one order's ending never holds back its neighbours: executed, expired, rejected and waiting in one batch", async () => {
    const { api, usd, ngn, customer, sell } = await setup('100.00');
    const executes = await sell('10.00');
    const expires = await sell('20.00');
    const waits = await sell('5.00', '1800');
    const frozenUsd = await openAccount(api, 'USD', customer, '50.00');
    const frozen = await sell('10.00', '1600', frozenUsd);
    await t.db
      .updateTable('fx_orders')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', expires)
      .execute();
    await api.patch(`/v1/accounts/${frozenUsd}/status`, { status: 'frozen' });
    await rate(api, '1700');
    // The rate moves back for the 1800 order after the scan found it due: it keeps waiting.
    await rate(api, '1900');
    const { due } = await scanWaitingOrders(t.db, new Date(Date.now() + 60_000), 1000);
    await rate(api, '1700');
    const ids = [executes, expires, waits, frozen];
    expect(due.filter((id) => ids.includes(id)).sort()).toEqual([...ids].sort());
    const outcomes = await t.db.transaction().execute((trx) => settleDueOrders(trx, ids));

    expect(Object.fromEntries(outcomes)).toEqual({
      [executes]: 'completed',
      [expires]: 'expired',
      [waits]: 'waiting',
      [frozen]: 'rejected',
    });
    expect(await statusOf(api, executes)).toMatchObject({ status: 'completed', converted_amount: '16915.00' });
    expect(await statusOf(api, expires)).toMatchObject({ status: 'expired' });
    expect(await statusOf(api, waits)).toMatchObject({ status: 'pending' });
    expect(await statusOf(api, frozen)).toMatchObject({ status: 'rejected', rejection_reason: 'account_frozen' });
    expect(await eventsOf(t, executes)).toEqual(['fx.order.completed']);
    expect(await eventsOf(t, expires)).toEqual(['fx.order.expired']);
    expect(await eventsOf(t, frozen)).toEqual([]);
    // Only the waiting order still holds its 5 USD; the expired and rejected ones gave theirs back.
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '85.00' });
    expect(await balances(api, frozenUsd)).toEqual({ balance: '50.00', available: '50.00' });
    expect((await balances(api, ngn)).balance).toBe(`${20000 + 16915}.00`);
  });

  it('a batch that fails is settled order by order: the others complete, the bad one reports its error', async () => {
    const { api, usd, sell } = await setup('100.00');
    const [a, b, c] = [await sell('1.00'), await sell('2.00'), await sell('3.00')];
    await rate(api, '1700');
    // b's hold is no longer pending (as if finished behind the order's back): its batch refuses to go on.
    const hold = await t.db.selectFrom('fx_orders').select('hold_id').where('id', '=', b).executeTakeFirstOrThrow();
    await t.db.updateTable('ledger_holds').set({ status: 'voided' }).where('id', '=', hold.hold_id!).execute();
    await expect(t.db.transaction().execute((trx) => settleDueOrders(trx, [a, b, c]))).rejects.toThrow(/not pending/);

    await expect(settleDue(t.db, t.config, [a, b, c], [])).rejects.toThrow();
    expect((await statusOf(api, a)).status).toBe('completed');
    expect((await statusOf(api, b)).status).toBe('pending');
    expect((await statusOf(api, c)).status).toBe('completed');
    // Put b's hold back as it was, and the next pass settles it.
    await sql`update ledger_holds set status = 'pending' where id = ${hold.hold_id!}`.execute(t.db);
    await settleDue(t.db, t.config, [b], []);
    expect((await statusOf(api, b)).status).toBe('completed');
    expect(await balances(api, usd)).toEqual({ balance: '94.00', available: '94.00' });
  });

  it('settles each order once when workers race, and every ledger reconciles', async () => {
    const { api, sell } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) ids.push(await sell('1.00'));
    await rate(api, '1700');
    const runs = await Promise.all([0, 1, 2].map(() => t.db.transaction().execute((trx) => settleDueOrders(trx, [...ids].reverse()))));
    // SKIP LOCKED: each order is claimed by one batch; the others find it gone or taken.
    const completed = runs.flatMap((r) => [...r].filter(([, o]) => o === 'completed').map(([id]) => id));
    expect(completed.sort()).toEqual([...ids].sort());
    for (const id of ids) expect(await eventsOf(t, id)).toEqual(['fx.order.completed']);
    const report = await reconcile(t.db);
    expect(report.ok, JSON.stringify(report)).toBe(true);
  });
});
