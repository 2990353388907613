import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusinessSettings } from '../../src/core/settings.js';
import * as ledger from '../../src/ledger/index.js';
import * as accounts from '../../src/modules/accounts/service.js';
import { newId } from '../../src/lib/ids.js';
import { createMovements } from '../../src/modules/transfers/service.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp, countStatements } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';
import { cardholder } from '../card-helpers.js';
import { nubans, remitter, verifiedPayee } from '../payout-fixtures.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts } from '../../src/modules/transfers/payout-lifecycle.js';

/**
 * The batch posting path (docs/money-path.md): many internal transfers in one transaction, each
 * decided on its own in arrival order. Concurrent requests over HTTP form real batches on both
 * databases (PGlite: whatever queued while its one connection was busy).
 */
let t: TestApp;
beforeAll(async () => {
  // One lane: while it is busy every new request queues, so concurrent requests form batches
  // (on PostgreSQL; PGlite's one connection also serializes the requests' auth lookups).
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1, SANDBOX_RAIL_DELAY_MS: 0 });
});
afterAll(async () => t?.close());

const transfer = (from: string, to: string, amount: string) => ({
  source: { id: from },
  destination: { destination_type: 'internal_account', id: to },
  amount,
});

async function setup(name: string, dailyLimit = '30.00') {
  const tenant = await t.tenant(name);
  await setSettings(t.db, tenant.tenant_id, { kyc_limits: { basic: { NGN: { per_transaction: '20.00', daily: dailyLimit } } } });
  const api = clientFor(t, tenant.sandbox.secret_key);
  const customer = (await api.post('/v1/customers', johnDoe())).body.data.id as string;
  await approveKyc(api, customer);
  const open = async (customerId: string | null, fund?: string) => {
    const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'b', ...(customerId ? { customer_id: customerId } : {}) })).body
      .data;
    if (fund) expect((await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund })).status).toBe(200);
    return a.id as string;
  };
  return { tenant, api, customer, open };
}

/** The context a request of the business's sandbox secret key gets, with these settings. */
const contextOf = (tenantId: string, settings: BusinessSettings) => ({
  tenantId,
  environment: 'sandbox' as const,
  keyKind: 'secret' as const,
  requestId: 'r',
  settings,
});

async function balances(api: Client, ids: string[]) {
  const out = new Map<string, bigint>();
  for (const id of ids) {
    const a = (await api.get(`/v1/accounts/${id}`)).body.data;
    out.set(id, BigInt(String(a.balance).replace('.', '')));
    expect(BigInt(String(a.available_balance).replace('.', ''))).toBeGreaterThanOrEqual(0n);
  }
  return out;
}

describe('batch posting: each transfer on its own', () => {
  it("one transfer's refusal (funds, limit, missing account) never fails its neighbours", async () => {
    const { tenant, api, customer, open } = await setup('Batch Ltd');
    const rich = await open(null, '100.00');
    const poor = await open(null, '1.00');
    const cust = await open(customer, '100.00');
    const sink = await open(null);
    const ctx = contextOf(tenant.tenant_id, {
      kyc_limits: { basic: { NGN: { per_transaction: '20.00', daily: '30.00' } } },
    });
    const req = (from: string, to: string, amount: string) => ({ ctx, config: t.config, body: transfer(from, to, amount) as never });
    const outcomes = await t.db.transaction().execute((trx) =>
      createMovements(trx, [
        req(rich, sink, '10.00'),
        req(poor, sink, '5.00'), // insufficient funds
        req(cust, sink, '20.00'),
        req(cust, sink, '15.00'), // over the daily limit, counting the transfer before it
        req(rich, sink, '90.00'), // exactly what the first one left
        req(rich, '00000000-0000-7000-8000-000000000000', '1.00'), // no such account
        req(cust, sink, '10.00'), // exactly the daily limit
      ]),
    );
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.error.code))).toEqual([
      'ok',
      'insufficient_funds',
      'ok',
      'limit_exceeded',
      'ok',
      'not_found',
      'ok',
    ]);
    const after = await balances(api, [rich, poor, cust, sink]);
    expect([...after.values()]).toEqual([0n, 100n, 7000n, 13000n]);
    // The daily limit reads a running counter kept in the same transaction (no scan of the day's
    // transfers): it holds exactly the customer's accepted transfers, not the refused one.
    const counter = await sql<{ amount: bigint }>`
      select amount from customer_daily_spend where tenant_id = ${tenant.tenant_id} and customer_id = ${customer}`.execute(t.db);
    expect(counter.rows.map((r) => r.amount)).toEqual([3000n]);
    expect((await ledger.reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('costs the same statements for one transfer as for fifty: nine, the writes in one', async () => {
    const { tenant, customer, open } = await setup('Statements Ltd', '1000.00');
    const cust = await open(customer, '500.00');
    const rich = await open(null, '500.00');
    const sink = await open(null);
    const ctx = contextOf(tenant.tenant_id, { kyc_limits: { basic: { NGN: { per_transaction: '20.00', daily: '1000.00' } } } });
    const req = (from: string) => ({ ctx, config: t.config, body: transfer(from, sink, '1.00') as never });
    const statements = async (reqs: ReturnType<typeof req>[]) => {
      const { count, result: outcomes } = await countStatements(t.db, (trx) => createMovements(trx, reqs));
      expect(outcomes.every((o) => o.ok)).toBe(true);
      return count;
    };
    const one = await statements([req(cust)]);
    const fifty = await statements(Array.from({ length: 50 }, (_, i) => req(i % 2 === 0 ? cust : rich)));
    // accounts (share lock), KYC levels, spending locks, today's counters (between two settings of
    // the plan mode: db/generic-plan.ts), balance rows (their locks, then the rows: ledger/repo.ts
    // balanceLock), and one statement for every write: balances, ledger transactions and entries,
    // account transactions, transfers, events, counters.
    expect(one).toBe(9);
    expect(fifty).toBe(one);
  });

  it('knows the owner and currency of the accounts it locked, per business; a known account whose transfer has a fee takes the usual path', async () => {
    const { tenant, customer, open } = await setup('Known Ltd', '1000.00');
    const fees = await open(null); // the business's oldest account: where its fees go
    const own = await open(customer, '50.00');
    const business = await open(null, '50.00');
    const sink = await open(null);
    const ctx = contextOf(tenant.tenant_id, { kyc_limits: { basic: { NGN: { per_transaction: '20.00', daily: '1000.00' } } } });
    await t.db.transaction().execute((trx) => accounts.lockForMovement(trx, ctx, [own, business]));
    expect(accounts.knownAccount(ctx, own)).toEqual({ scope: `${tenant.tenant_id}:sandbox`, customerId: customer, currency: 'NGN' });
    expect(accounts.knownAccount(ctx, business)?.customerId).toBeNull();
    // Another business, or the other environment, is told nothing about it.
    expect(accounts.knownAccount({ ...ctx, environment: 'live' }, own)).toBeUndefined();
    expect(accounts.knownAccount(contextOf(newId(), {}), own)).toBeUndefined();

    // Known sources and a fee: the fee account is found (or created) after the spending locks and
    // before the balance rows, as always; the batch still posts every fee.
    const charged = { ...ctx, settings: { ...ctx.settings, fees: { internal_transfer: { NGN: { flat: '0.50' } } } } };
    const req = (from: string) => ({ ctx: charged, config: t.config, body: transfer(from, sink, '1.00') as never });
    const outcomes = await t.db.transaction().execute((trx) => createMovements(trx, [req(own), req(business), req(own)]));
    expect(outcomes.map((o) => o.ok)).toEqual([true, true, true]);
    const api = clientFor(t, tenant.sandbox.secret_key);
    const after = await balances(api, [own, business, sink, fees]);
    expect(after.get(own)).toBe(5_000n - 2n * 150n);
    expect(after.get(business)).toBe(5_000n - 150n);
    expect(after.get(sink)).toBe(300n);
    expect(after.get(fees)).toBe(150n);
    expect((await ledger.reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('card fundings take the same path: mixed with internal transfers in one batch, each decided alone', async () => {
    const tenant = await t.tenant('Cards Batch Ltd');
    const api = clientFor(t, tenant.sandbox.secret_key);
    const customer = await cardholder(api);
    const open = async (fund: string, customerId?: string) => {
      const a = (await api.post('/v1/accounts', { currency: 'USD', label: 'c', ...(customerId ? { customer_id: customerId } : {}) })).body
        .data;
      await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund });
      return a.id as string;
    };
    const own = await open('50.00', customer);
    const business = await open('10.00');
    const card = (await api.post('/v1/cards', { customer_id: customer, card_type: 'virtual', card_limit: 10000, name_on_card: 'John Doe' }))
      .body.data.card.id as string;
    const ctx = contextOf(tenant.tenant_id, {});
    const req = (from: string, destination_type: string, to: string, amount: string) => ({
      ctx,
      config: t.config,
      body: { source: { source_type: 'internal_account', id: from }, destination: { destination_type, id: to }, amount } as never,
    });
    const outcomes = await t.db.transaction().execute((trx) =>
      createMovements(trx, [
        req(own, 'card', card, '30.00'),
        req(own, 'card', card, '30.00'), // insufficient funds: the first took 30 of 50
        req(business, 'internal_account', own, '10.00'),
        req(own, 'card', card, '30.00'), // now there is enough again (20 + 10)
        req(own, 'card', '00000000-0000-7000-8000-000000000000', '1.00'), // no such card
      ]),
    );
    expect(outcomes.map((o) => (o.ok ? o.data.destination.destination_type : o.error.code))).toEqual([
      'card',
      'insufficient_funds',
      'internal_account',
      'card',
      'not_found',
    ]);
    expect((await api.get(`/v1/cards/${card}/balance`)).body.data).toMatchObject({ balance: '60.00', available_balance: '60.00' });
    const ownNow = (await api.get(`/v1/accounts/${own}`)).body.data;
    expect(ownNow.balance).toBe('0.00');
    const events = await sql<{ event_type: string }>`
      select event_type from events where tenant_id = ${tenant.tenant_id} and event_type in ('cards.transaction.funding', 'transfer.status.completed')
      order by event_type`.execute(t.db);
    expect(events.rows.filter((e) => e.event_type === 'cards.transaction.funding')).toHaveLength(2);
    // Card funding counts in the customer's daily total (it has no limit of its own).
    const counter = await sql<{ amount: bigint }>`
      select amount from customer_daily_spend where tenant_id = ${tenant.tenant_id} and customer_id = ${customer}`.execute(t.db);
    expect(counter.rows.map((r) => r.amount)).toEqual([6000n]);
    expect((await ledger.reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('payouts take the same path: their funds held in memory beside transfers, each decided alone, then settled by the rail', async () => {
    const { tenant, api, customer, open } = await setup('Payouts Batch Ltd', '100000.00');
    const payee = await verifiedPayee(t, api, customer, nubans(700000)());
    const own = await open(customer, '10000.00');
    const sink = await open(null);
    const ctx = contextOf(tenant.tenant_id, { kyc_limits: { basic: { NGN: { per_transaction: '7000.00', daily: '100000.00' } } } });
    const req = (body: Record<string, unknown>) => ({ ctx, config: t.config, body: body as never });
    const payout = (amount: string) =>
      req({
        source: { source_type: 'internal_account', id: own },
        destination: { destination_type: 'external_account', id: payee },
        amount,
        additional_information: remitter,
      });
    const {
      count,
      result: [alone],
    } = await countStatements(t.db, (trx) => createMovements(trx, [payout('100.00')]));
    expect(alone!.ok).toBe(true);
    // accounts (share lock), the payee, the settlement account, KYC levels, spending locks, today's
    // counters (between two settings of the plan mode), the fee account, balance rows (their locks,
    // then the rows), and the writes (holds, balances, account transaction, transfer, event,
    // counter): 12.
    expect(count).toBe(12);
    const outcomes = await t.db.transaction().execute((trx) =>
      createMovements(trx, [
        payout('6000.00'),
        payout('6000.00'), // insufficient funds: 6,000 (and its fee) are held
        req(transfer(own, sink, '1000.00')),
        payout('8000.00'), // over the per-transaction limit
        payout('100.00'), // the bank's minimum
      ]),
    );
    expect(outcomes.map((o) => (o.ok ? o.data.transfer_status : o.error.code))).toEqual([
      'pending',
      'insufficient_funds',
      'completed',
      'limit_exceeded',
      'pending',
    ]);
    const fees = [alone!, ...outcomes].flatMap((o) =>
      o.ok && o.data.transfer_status === 'pending' ? [BigInt(String(o.data.fee).replace('.', ''))] : [],
    );
    const held = 620000n + fees.reduce((a, b) => a + b, 0n); // three payouts: 100, 6,000 and 100, with their fees
    const account = (await api.get(`/v1/accounts/${own}`)).body.data;
    expect(BigInt(String(account.balance).replace('.', ''))).toBe(900000n);
    expect(BigInt(String(account.available_balance).replace('.', ''))).toBe(900000n - held);
    const pending = await sql<{ n: number }>`
      select count(*)::int as n from events where tenant_id = ${tenant.tenant_id} and event_type = 'transfer.status.pending'`.execute(t.db);
    expect(pending.rows[0]!.n).toBe(3);
    // The holds a batch took are finished by the payout lifecycle like any other.
    await dispatchPendingPayouts(t.db, { SANDBOX_RAIL_DELAY_MS: 0 });
    await settleDueSandboxPayouts(t.db);
    await settleDueSandboxPayouts(t.db);
    for (const o of [alone!, ...outcomes]) {
      if (o.ok && o.data.transfer_status === 'pending') {
        expect((await api.get(`/v1/transfers/${o.data.id}`)).body.data.transfer_status).toBe('completed');
      }
    }
    const after = (await api.get(`/v1/accounts/${own}`)).body.data;
    expect(BigInt(String(after.balance).replace('.', ''))).toBe(900000n - held);
    expect((await ledger.reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
  });

  it('a request the database itself rejects fails alone: its batch is rerun item by item', async () => {
    const { api, open } = await setup('Fault Ltd');
    const from = await open(null, '10.00');
    const to = await open(null);
    // A NUL character is valid JSON but not storable in PostgreSQL text/jsonb: a real database
    // error in the middle of a batch (or a 400, should input validation ever refuse it first).
    const bodies = Array.from({ length: 7 }, (_, i) => ({
      ...transfer(from, to, '1.00'),
      metadata: { line: i === 3 ? 'bad\u0000' : `ok-${i}` },
    }));
    const results = await Promise.all(bodies.map((b) => api.post('/v1/transfers', b)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, expect.any(Number), 200, 200, 200]);
    expect([400, 500]).toContain(results[3]!.status);
    expect((await balances(api, [from, to])).get(to)).toBe(600n);
  });

  it('concurrent mixed transfers keep every invariant (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ from: fc.nat(3), to: fc.nat(3), cents: fc.integer({ min: 1, max: 1500 }), key: fc.nat(12) }), {
          minLength: 4,
          maxLength: 24,
        }),
        async (ops) => {
          const { tenant, api, customer, open } = await setup('Prop Batch', '25.00');
          const ids = [await open(null, '20.00'), await open(customer, '40.00'), await open(customer), await open(null, '5.00')];
          const before = await balances(api, ids);
          const sent = ops.map((o) => ({ ...o, body: transfer(ids[o.from]!, ids[o.to]!, (o.cents / 100).toFixed(2)) }));
          // All at once: they queue behind each other and form batches.
          const results = await Promise.all(
            sent.map((o) => api.post('/v1/transfers', o.body, { idempotencyKey: `${tenant.tenant_id}-${o.key}` })),
          );

          const effects = new Map<number, { body: unknown; text: string; status: number }>();
          results.forEach((res, i) => {
            const o = sent[i]!;
            expect([200, 400, 409, 422]).toContain(res.status);
            const first = effects.get(o.key);
            if (!first && res.status !== 400 && res.headers['idempotency-replayed'] !== 'true')
              effects.set(o.key, { body: o.body, text: res.text, status: res.status });
          });
          // One effect per key: every stored answer of a key is the same text (a replay is byte-identical).
          results.forEach((res, i) => {
            const first = effects.get(sent[i]!.key);
            if (res.headers['idempotency-replayed'] === 'true' && first && JSON.stringify(first.body) === JSON.stringify(sent[i]!.body)) {
              expect(res.text).toBe(first.text);
            }
          });
          // Conservation: balances moved by exactly the successful transfers, once each.
          const expected = new Map(before);
          const ok = results.flatMap((res, i) => (res.status === 200 && res.headers['idempotency-replayed'] !== 'true' ? [sent[i]!] : []));
          for (const o of ok) {
            expected.set(ids[o.from]!, expected.get(ids[o.from]!)! - BigInt(o.cents));
            expected.set(ids[o.to]!, expected.get(ids[o.to]!)! + BigInt(o.cents));
          }
          expect(await balances(api, ids)).toEqual(expected);
          const count = await sql<{ n: string }>`select count(*)::text as n from transfers where tenant_id = ${tenant.tenant_id}`.execute(
            t.db,
          );
          expect(Number(count.rows[0]!.n)).toBe(ok.length);
          // KYC daily limit exact: the customer's accounts (1, 2) sent at most 25.00 to others.
          const custSent = ok.filter((o) => o.from === 1 || o.from === 2).reduce((s, o) => s + o.cents, 0);
          expect(custSent).toBeLessThanOrEqual(2500);
          expect((await ledger.reconcile(t.db, tenant.tenant_id)).ok).toBe(true);
        },
      ),
      { numRuns: 4 },
    );
  }, 120_000);
});
