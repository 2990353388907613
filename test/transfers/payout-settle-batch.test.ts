import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ledger/index.js';
import { claimDuePayouts } from '../../src/rails/repo.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts, settlePayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { clientFor, countStatements, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc, enableInternationalTransfers } from '../kyc-helpers.js';
import { nubans, payoutBody, verifiedPayee } from '../payout-fixtures.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

/**
 * Due sandbox payouts settle together (transfers/payout-lifecycle.ts settlePayouts,
 * docs/money-path.md): one transaction and a fixed number of statements for one payout or
 * fifty, each booked as applyRailOutcome books one alone. Before, each was a transaction of its
 * own of about 17 statements, and each of them updated the same settlement balance row.
 */
let t: TestApp;
let api: Client;
let tenantId: string;
let customerId: string;
const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };
const nuban = nubans(900000);

beforeAll(async () => {
  t = await startTestApp(cfg);
  const tenant = await t.tenant('Settle Co');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await enableInternationalTransfers(api, customerId);
  expect((await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1500' })).status).toBe(200);
});
afterAll(async () => t?.close());

async function account(currency: string, fund: string) {
  const a = (await api.post('/v1/accounts', { currency, label: 'acc', customer_id: customerId })).body.data;
  expect((await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund })).status).toBe(200);
  return a.id as string;
}

/** Payouts of `amount` from `source` to a new verified payee, dispatched (processing): their ids. */
async function payouts(source: string, amount: string, count: number): Promise<string[]> {
  const payee = await verifiedPayee(t, api, customerId, nuban());
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await api.post('/v1/transfers', payoutBody(source, payee, amount, { description: 'supplier', customer_id: customerId }));
    expect(res.status, res.text).toBe(200);
    ids.push(res.body.data.id);
  }
  while (await dispatchPendingPayouts(t.db, cfg));
  return ids;
}

/**
 * Claims every due payout (as the settlement job does, before a transaction opens: PGlite has one
 * connection), and returns those of each list of ids.
 */
async function claimed(...lists: string[][]) {
  const due = await claimDuePayouts(t.db, 1000, 60);
  return lists.map((ids) => due.filter((d) => ids.includes(d.transfer_id)));
}

const transfer = async (id: string) => (await api.get(`/v1/transfers/${id}`)).body.data;
const acct = async (id: string) => (await api.get(`/v1/accounts/${id}`)).body.data;
const txOf = async (accountId: string) => (await api.get(`/v1/transactions?account_id=${accountId}&limit=100`)).body.data.items;
const eventsOf = async (id: string) =>
  (await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', id).orderBy('id').execute()).map((e) => e.event_type);
const scope = () => ({ tenantId, environment: 'sandbox' as const });

/** What a completed payout left in the books, with ids and times left out: to compare a batch's with a lone one's. */
async function booked(id: string) {
  const tr = await transfer(id);
  const entries = await t.db
    .selectFrom('ledger_entries as e')
    .innerJoin('ledger_transactions as x', 'x.id', 'e.transaction_id')
    .select(['x.kind', 'x.metadata', 'e.account_id', 'e.amount'])
    .where('x.reference', '=', id)
    .orderBy('x.kind')
    .orderBy('e.amount')
    .execute();
  const holds = await t.db
    .selectFrom('ledger_holds')
    .select(['kind', 'status', 'amount', 'posted_amount'])
    .where('reference', '=', id)
    .orderBy('kind')
    .execute();
  const tx = (await txOf(tr.source.id)).find((x: { reference: string }) => x.reference === id);
  const event = await t.db
    .selectFrom('events')
    .select(eventEnvelope().as('payload'))
    .where('event_group_id', '=', id)
    .where('event_type', '=', 'transfer.status.completed')
    .executeTakeFirstOrThrow();
  const strip = ({ id: _i, reference: _r, transaction_id: _t, date_created: _c, date_updated: _u, ...rest }: Record<string, unknown>) =>
    rest;
  const data = (event.payload as { event_data: Record<string, unknown> }).event_data;
  return {
    transfer: strip(tr),
    entries: entries.map((e) => ({ ...e, metadata: { ...(e.metadata as object), hold_id: 'h', transfer_id: 't' } })),
    holds,
    transaction: { ...strip(tx), balance_before: undefined, balance_after: undefined },
    movedBy: BigInt(tx.balance_before.replace('.', '')) - BigInt(tx.balance_after.replace('.', '')),
    event: strip(data),
  };
}

describe('due sandbox payouts settle together', () => {
  it('costs the same statements for one payout as for fifty, and books each as alone', async () => {
    const src = await account('NGN', '10000.00');
    const one = await payouts(src, '100.00', 1);
    const fifty = await payouts(src, '100.00', 50);
    // 51 payouts of 100.00 and their 0.50 fees held.
    expect(await acct(src)).toMatchObject({ balance: '10000.00', available_balance: '4874.50' });

    const [dueOne, dueFifty] = await claimed(one, fifty);
    const first = await countStatements(t.db, (trx) => settlePayouts(trx, dueOne!));
    const many = await countStatements(t.db, (trx) => settlePayouts(trx, dueFifty!));
    // The transfers (locked), their rail payouts (settled), their holds (locked), the balance rows
    // (their locks, then the rows), the account transactions' accounts, and one statement for every
    // write: balances, holds, ledger rows, account transactions, transfers, events. Alone, a payout
    // was about 17.
    expect(first.count).toBe(7);
    expect(many.count).toBe(first.count);
    expect(many.result.sort()).toEqual([...fifty].sort());

    expect(await acct(src)).toMatchObject({ balance: '4874.50', available_balance: '4874.50' });
    for (const id of [one[0]!, fifty[0]!, fifty[49]!]) {
      expect((await transfer(id)).transfer_status).toBe('completed');
      expect(await eventsOf(id)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.completed']);
    }
    // Each account transaction is completed with the balances around its own two postings, in
    // settlement order: 51 distinct steps of 100.50 from 10000.00 down to 4874.50.
    const txs = (await txOf(src)).filter((x: { transaction_type: string }) => x.transaction_type === 'global_remittance');
    expect(txs).toHaveLength(51);
    expect(txs.every((x: { status: string }) => x.status === 'completed')).toBe(true);
    const cents = (amount: string) => Number(amount.replace('.', ''));
    const steps = txs
      .map((x: { balance_before: string; balance_after: string }) => [x.balance_before, x.balance_after])
      .sort((a: string[], b: string[]) => cents(b[1]!) - cents(a[1]!));
    expect(steps[0]).toEqual(['10000.00', '9899.50']);
    expect(steps[50]).toEqual(['4975.00', '4874.50']);
    expect(new Set(steps.map((s: string[]) => s[1])).size).toBe(51);
    const holds = await t.db
      .selectFrom('ledger_holds')
      .select(['status', 'transaction_id'])
      .where('reference', 'in', [...one, ...fifty])
      .execute();
    expect(holds).toHaveLength(102);
    expect(holds.every((h) => h.status === 'posted' && h.transaction_id !== null)).toBe(true);
    expect((await ledger.reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('books an international payout with its FX leg as a lone settlement does', async () => {
    const src = await account('USD', '1000.00');
    const [alone, together, other] = await payouts(src, '100.01', 3);
    // Alone, through the simulation (applyRailOutcome); the other two together.
    expect((await api.post(`/v1/simulations/transfers/${alone}/complete`)).status).toBe(200);
    const [due] = await claimed([together!, other!]);
    const ids = await countStatements(t.db, (trx) => settlePayouts(trx, due!));
    expect(ids.result.sort()).toEqual([together!, other!].sort());
    // One more statement per business and currency for each of the FX position and settlement accounts.
    expect(ids.count).toBe(9);

    const [a, b] = [await booked(alone!), await booked(together!)];
    expect(b).toEqual(a);
    expect(a.transfer).toMatchObject({ transfer_status: 'completed', local_amount: '149264.92', local_currency: 'NGN' });
    expect(a.entries.map((e) => e.kind)).toEqual(['payout', 'payout', 'payout_fee', 'payout_fee', 'payout_fx', 'payout_fx']);
    expect(a.movedBy).toBe(10051n);
    expect(await acct(src)).toMatchObject({ balance: '698.47', available_balance: '698.47' });
    const s = scope();
    const ngnPos = await ledger.getBalance(t.db, s, await ledger.systemAccount(t.db, s, 'fx_position', 'NGN'));
    expect(ngnPos?.posted).toBe(-3n * 14926492n);
    expect((await ledger.reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('the job: a payout the batch cannot settle fails alone, and the others still settle', async () => {
    const src = await account('NGN', '1000.00');
    const ids = await payouts(src, '100.00', 3);
    // The middle payout's hold is released behind its back: alone, settling it fails (its hold is
    // not pending), and before the batch the payouts claimed after it waited for the next pass.
    const faulty = ids[1]!;
    const row = await t.db.selectFrom('transfers').select('hold_id').where('id', '=', faulty).executeTakeFirstOrThrow();
    await t.db.transaction().execute((trx) => ledger.voidHold(trx, scope(), row.hold_id!));

    await expect(settleDueSandboxPayouts(t.db)).rejects.toThrow(/not pending|hold/);
    expect((await transfer(ids[0]!)).transfer_status).toBe('completed');
    expect((await transfer(ids[2]!)).transfer_status).toBe('completed');
    expect((await transfer(faulty)).transfer_status).toBe('processing');
    expect((await ledger.reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('payouts of two businesses share a batch, each on its own books', async () => {
    const src = await account('NGN', '1000.00');
    const [mine] = await payouts(src, '100.00', 1);
    const other = await t.tenant('Other Settle Co');
    const otherApi = clientFor(t, other.sandbox.secret_key);
    const otherCustomer = (await otherApi.post('/v1/customers', johnDoe())).body.data.id;
    await approveKyc(otherApi, otherCustomer);
    const otherSrc = (await otherApi.post('/v1/accounts', { currency: 'NGN', label: 'o', customer_id: otherCustomer })).body.data.id;
    expect((await otherApi.post(`/v1/simulations/accounts/${otherSrc}/fund`, { amount: '500.00' })).status).toBe(200);
    const otherPayee = await verifiedPayee(t, otherApi, otherCustomer, nuban());
    const res = await otherApi.post(
      '/v1/transfers',
      payoutBody(otherSrc, otherPayee, '200.00', { description: 'rent', customer_id: otherCustomer }),
    );
    expect(res.status, res.text).toBe(200);
    while (await dispatchPendingPayouts(t.db, cfg));

    const [due] = await claimed([mine!, res.body.data.id]);
    expect(due).toHaveLength(2);
    const settled = await t.db.transaction().execute((trx) => settlePayouts(trx, due!));
    expect(settled.sort()).toEqual([mine!, res.body.data.id].sort());
    expect(await acct(src)).toMatchObject({ balance: '899.50', available_balance: '899.50' });
    expect((await otherApi.get(`/v1/accounts/${otherSrc}`)).body.data).toMatchObject({ balance: '299.00', available_balance: '299.00' });
    expect((await otherApi.get(`/v1/transfers/${res.body.data.id}`)).body.data.transfer_status).toBe('completed');
    expect((await api.get(`/v1/transfers/${res.body.data.id}`)).status).toBe(404);
    expect((await ledger.reconcile(t.db, tenantId)).ok).toBe(true);
    expect((await ledger.reconcile(t.db, other.tenant_id)).ok).toBe(true);
  });

  it('a payout still pending (handed to the rail, processing not yet recorded) is not claimed, so it waits no lease', async () => {
    const src = await account('NGN', '200.00');
    const [id] = await payouts(src, '100.00', 1);
    await t.db.updateTable('transfers').set({ status: 'pending' }).where('id', '=', id!).execute();
    const railRow = () =>
      t.db.selectFrom('rail_payouts').select(['state', 'settle_after']).where('transfer_id', '=', id!).executeTakeFirstOrThrow();
    const due = (await railRow()).settle_after!;
    // Before, the claim took it and pushed its settle time a lease (60 s) ahead: once dispatch
    // recorded `processing` a moment later, it still waited the whole minute.
    const [claimedNow] = await claimed([id!]);
    expect(claimedNow).toEqual([]);
    expect(await railRow()).toEqual({ state: 'submitted', settle_after: due });
    // Settling what a claim took is still guarded: a batch given it leaves it.
    const settled = await t.db
      .transaction()
      .execute((trx) => settlePayouts(trx, [{ tenant_id: tenantId, environment: 'sandbox', transfer_id: id! }]));
    expect(settled).toEqual([]);
    expect((await transfer(id!)).transfer_status).toBe('pending');

    await t.db.updateTable('transfers').set({ status: 'processing' }).where('id', '=', id!).execute();
    expect(await settleDueSandboxPayouts(t.db)).toBe(false);
    expect((await transfer(id!)).transfer_status).toBe('completed');
  });
});
