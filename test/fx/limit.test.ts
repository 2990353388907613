import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { limitOrderJob } from '../../src/modules/fx/worker.js';
import { balances, eventsOf, newCustomer, openAccount, runLimitWorker } from '../fx-helpers.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/** Limit orders: the hold, execution by the worker when the simulated rate reaches the target, cancel, expiry. */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

/** A business with a customer holding funded USD and NGN accounts. */
async function setup() {
  const tenant = await t.tenant();
  const api = clientFor(t, tenant.sandbox.secret_key);
  const customer = await newCustomer(api);
  const usd = await openAccount(api, 'USD', customer, '100.00');
  const ngn = await openAccount(api, 'NGN', customer, '20000.00');
  const limit = (side: 'buy' | 'sell', amount: string, target: string) =>
    api.post('/v1/fx/orders', {
      customer_id: customer,
      order_type: 'limit',
      side,
      pair: { base: 'USD', quote: 'NGN' },
      amount,
      target_rate: target,
      source_id: side === 'sell' ? usd : ngn,
      destination_id: side === 'sell' ? ngn : usd,
    });
  return { tenant, api, customer, usd, ngn, limit };
}

async function holdOf(orderId: string) {
  const order = await t.db.selectFrom('fx_orders').select('hold_id').where('id', '=', orderId).executeTakeFirstOrThrow();
  return t.db.selectFrom('ledger_holds').select(['status', 'amount']).where('id', '=', order.hold_id!).executeTakeFirstOrThrow();
}

describe('limit orders', () => {
  it('holds the funds, waits, and executes when the simulated rate reaches target_rate', async () => {
    const { api, usd, ngn, limit } = await setup();
    const res = await limit('sell', '10.00', '1600');
    expect(res.status).toBe(200);
    const o = res.body.data;
    expect(o).toMatchObject({ status: 'pending', order_type: 'limit', target_rate: '1600.00', fee: null });
    // Absent, never null, until executed (docs/api-rules.md#absent-values).
    expect(o).not.toHaveProperty('rate');
    expect(o).not.toHaveProperty('converted_amount');
    expect(new Date(o.expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600_000);
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '90.00' });

    await runLimitWorker(t); // bid 1542.25 < 1600: keeps waiting
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.status).toBe('pending');

    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1610' });
    await runLimitWorker(t);
    const done = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    // bid = 1610 * 0.995 = 1601.95 >= 1600: executes at the market, not at the target
    expect(done).toMatchObject({ status: 'completed', rate: '1601.95', converted_amount: '16019.50', fee: '0.00' });
    expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
    expect(await balances(api, ngn)).toEqual({ balance: '36019.50', available: '36019.50' });
    expect(await holdOf(o.id)).toMatchObject({ status: 'voided' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.completed']);
  });

  it('buys when the ask falls to the target, paying no more than the held cost', async () => {
    const { api, usd, ngn, limit } = await setup();
    const o = (await limit('buy', '10.00', '1500')).body.data;
    expect(o.status).toBe('pending');
    expect(await balances(api, ngn)).toEqual({ balance: '20000.00', available: '5000.00' });
    expect((await holdOf(o.id)).amount).toBe(1_500_000n);
    await api.post('/v1/simulations/fx/rates', { base: 'NGN', quote: 'USD', rate: '0.000675675676' }); // USD/NGN mid 1480
    await runLimitWorker(t);
    const done = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    // ask = 1480 * 1.005 = 1487.40 (the reverse of the simulated pair, rounded half-up first)
    expect(done.status).toBe('completed');
    const paid = 2_000_000n - BigInt((await balances(api, ngn)).balance.replace('.', ''));
    expect(paid).toBe(BigInt(done.converted_amount.replace('.', '')));
    expect(paid).toBeLessThanOrEqual(1_500_000n);
    expect(await balances(api, usd)).toEqual({ balance: '110.00', available: '110.00' });
    const ngnNow = await balances(api, ngn);
    expect(ngnNow.available).toBe(ngnNow.balance);
  });

  it('fails with 422 insufficient_funds when the hold does not fit, holding nothing', async () => {
    const { api, usd, limit } = await setup();
    const res = await limit('sell', '100.01', '1600');
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('insufficient_funds');
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
  });

  it('cancels a pending order, releasing the hold exactly once', async () => {
    const { api, usd, limit } = await setup();
    const o = (await limit('sell', '25.00', '2000')).body.data;
    expect((await balances(api, usd)).available).toBe('75.00');
    const cancelled = await api.post(`/v1/fx/orders/${o.id}/cancel`, undefined, { idempotencyKey: `cancel-${o.id}` });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', id: o.id });
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });

    const replay = await api.post(`/v1/fx/orders/${o.id}/cancel`, undefined, { idempotencyKey: `cancel-${o.id}` });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body).toEqual(cancelled.body);
    const again = await api.post(`/v1/fx/orders/${o.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state_transition');
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '2500' });
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.status).toBe('cancelled');
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    expect(await holdOf(o.id)).toMatchObject({ status: 'voided' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.cancelled']);
  });

  it('refuses to cancel a completed market order (409)', async () => {
    const { api, customer, usd, ngn } = await setup();
    const o = (
      await api.post('/v1/fx/orders', {
        customer_id: customer,
        order_type: 'market',
        pair: { base: 'USD', quote: 'NGN' },
        amount: '1',
        source_id: usd,
        destination_id: ngn,
      })
    ).body.data;
    const res = await api.post(`/v1/fx/orders/${o.id}/cancel`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invalid_state_transition');
  });

  it('expires after expires_at, releasing the hold', async () => {
    const { api, usd, limit } = await setup();
    const o = (await limit('sell', '40.00', '5000')).body.data;
    await t.db
      .updateTable('fx_orders')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', o.id)
      .execute();
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data.status).toBe('expired');
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
    expect(await eventsOf(t, o.id)).toEqual(['fx.order.expired']);
    expect((await api.post(`/v1/fx/orders/${o.id}/cancel`)).status).toBe(409);
  });

  it('rejects an order whose source account was frozen while it waited', async () => {
    const { api, usd, limit } = await setup();
    const o = (await limit('sell', '10.00', '1600')).body.data;
    await api.patch(`/v1/accounts/${usd}/status`, { status: 'frozen' });
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1700' });
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data).toMatchObject({ status: 'rejected', rejection_reason: 'account_frozen' });
    expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
  });

  it('refuses a limit order that could never settle (400) and rejects one whose proceeds outgrow the amount limit', async () => {
    const { api, customer, usd, ngn, limit } = await setup();
    const tiny = await limit('sell', '1.00', '0.000001');
    expect(tiny.status).toBe(400);
    expect(tiny.body.error.code).toBe('invalid_amount');
    const rich = await openAccount(api, 'USD', customer, '1000000.00');
    const o = (
      await api.post('/v1/fx/orders', {
        customer_id: customer,
        order_type: 'limit',
        pair: { base: 'USD', quote: 'NGN' },
        amount: '1000000',
        target_rate: '1',
        source_id: rich,
        destination_id: ngn,
      })
    ).body.data;
    expect(o.status).toBe('pending');
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '999999999' });
    await runLimitWorker(t);
    expect((await api.get(`/v1/fx/orders/${o.id}`)).body.data).toMatchObject({ status: 'rejected', rejection_reason: 'invalid_amount' });
    expect(await balances(api, rich)).toEqual({ balance: '1000000.00', available: '1000000.00' });
    expect((await balances(api, usd)).available).toBe('100.00');
  });

  it('executes each order once with several workers at the same time', async () => {
    const { api, limit } = await setup();
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await limit('sell', '1.00', '1600')).body.data.id);
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1700' });
    const workers = [limitOrderJob(t.db, t.config), limitOrderJob(t.db, t.config), limitOrderJob(t.db, t.config)];
    await Promise.all(
      workers.map(async (w) => {
        while (await w.tick()) {
          /* more */
        }
      }),
    );
    for (const id of ids) {
      expect((await api.get(`/v1/fx/orders/${id}`)).body.data.status).toBe('completed');
      expect(await eventsOf(t, id)).toEqual(['fx.order.completed']);
    }
  });

  it('settles a race between cancel and execution exactly one way', async () => {
    const { api, usd, ngn, limit } = await setup();
    const o = (await limit('sell', '10.00', '1600')).body.data;
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1700' });
    const [cancel] = await Promise.all([api.post(`/v1/fx/orders/${o.id}/cancel`), runLimitWorker(t)]);
    const final = (await api.get(`/v1/fx/orders/${o.id}`)).body.data;
    if (cancel.status === 200) {
      expect(final.status).toBe('cancelled');
      expect(await balances(api, usd)).toEqual({ balance: '100.00', available: '100.00' });
      expect(await eventsOf(t, o.id)).toEqual(['fx.order.cancelled']);
    } else {
      expect(cancel.body.error.code).toBe('invalid_state_transition');
      expect(final.status).toBe('completed');
      expect(await balances(api, usd)).toEqual({ balance: '90.00', available: '90.00' });
      expect((await balances(api, ngn)).balance).toBe(`${20000 + 16915}.00`);
      expect(await eventsOf(t, o.id)).toEqual(['fx.order.completed']);
    }
  });

  it('keeps every ledger reconciled', async () => {
    const report = await reconcile(t.db);
    expect(report.ok, JSON.stringify(report)).toBe(true);
  });
});
