import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ledger/index.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { gtbPayee, nubans, payoutBody, remitter } from '../payout-fixtures.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { ledgerEntriesOf } from '../../src/ops/repo.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc, approveKycLive, enableInternationalTransfers } from '../kyc-helpers.js';

let t: TestApp;
let api: Client;
let live: Client;
let other: Client;
let tenantId: string;
let customerId: string;
const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
const mtnGh = listInstitutions({ country: 'GH', type: 'mobile_money' }).find((i) => i.code === 'MTN')!;
const scope = () => ({ tenantId, environment: 'sandbox' as const });
const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };

const nuban = nubans(100000);

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Payout Co');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
  live = clientFor(t, tenant.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customerId);
});
afterAll(async () => t?.close());

async function account(currency: string, fund?: string) {
  const a = (await api.post('/v1/accounts', { currency, label: 'acc', customer_id: customerId })).body.data;
  if (fund) expect((await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund })).status).toBe(200);
  return a.id as string;
}

async function payee(body: Record<string, unknown> = {}, verify = true) {
  const res = await api.post('/v1/external-accounts', gtbPayee(customerId, nuban(), body));
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  if (verify) await verifyDuePayees(t.db, t.unitOfWork, cfg);
  return res.body.data.id as string;
}

const payout = (source: string, destination: string, amount: unknown, extra: Record<string, unknown> = {}) =>
  payoutBody(source, destination, amount, { description: 'supplier', customer_id: customerId, ...extra });

const acct = async (id: string) => (await api.get(`/v1/accounts/${id}`)).body.data;
const txOf = async (accountId: string) => (await api.get(`/v1/transactions?account_id=${accountId}`)).body.data.items;
const eventsOf = async (id: string) =>
  (await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', id).orderBy('id').execute()).map((e) => e.event_type);
async function reconciled() {
  const report = await ledger.reconcile(t.db, tenantId);
  expect(report.ok, JSON.stringify(report)).toBe(true);
}

describe('domestic payout', () => {
  it('holds, goes processing, settles on its own, with truthful balances and transactions at every step', async () => {
    const src = await account('NGN', '10000.00');
    const dest = await payee();
    const res = await api.post('/v1/transfer', payout(src, dest, '1000.00', { client_reference: 'po-1' }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const tr = res.body.data;
    expect(tr).toMatchObject({
      transfer_status: 'pending',
      amount: '1000.00',
      fee: '5.00',
      currency: 'NGN',
      local_amount: '1000.00',
      local_currency: 'NGN',
      rate: null,
      destination: { destination_type: 'external_account', id: dest, rail: 'bank_transfer' },
    });
    expect(await acct(src)).toMatchObject({ balance: '10000.00', available_balance: '8995.00' });
    const [pendingTx] = await txOf(src);
    expect(pendingTx).toMatchObject({
      status: 'pending',
      direction: 'out',
      amount: '1000.00',
      fee: '5.00',
      channel: 'bank_transfer',
      transaction_type: 'global_remittance',
    });

    await dispatchPendingPayouts(t.db, cfg);
    expect((await api.get(`/v1/transfers/${tr.id}`)).body.data.transfer_status).toBe('processing');
    await settleDueSandboxPayouts(t.db);
    await settleDueSandboxPayouts(t.db);
    expect((await api.get(`/v1/transfers/${tr.id}`)).body.data.transfer_status).toBe('completed');
    expect(await acct(src)).toMatchObject({ balance: '8995.00', available_balance: '8995.00' });
    const [doneTx] = await txOf(src);
    expect(doneTx).toMatchObject({ id: pendingTx.id, status: 'completed', balance_before: '10000.00', balance_after: '8995.00' });
    expect(await eventsOf(tr.id)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.completed']);
    await reconciled();
  });

  it('a retried payout with the same Idempotency-Key holds the money once', async () => {
    const src = await account('NGN', '1000.00');
    const dest = await payee();
    const first = await api.post('/v1/transfer', payout(src, dest, '300.00'), { idempotencyKey: `po-${src}` });
    const again = await api.post('/v1/transfers', payout(src, dest, '300.00'), { idempotencyKey: `po-${src}` });
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(await acct(src)).toMatchObject({ balance: '1000.00', available_balance: '698.50' });
  });

  it('a payout that fails after the funds were held gives the money back exactly once', async () => {
    const src = await account('NGN', '500.00');
    const res = await api.post('/v1/transfer', payout(src, await payee(), '200.00'));
    const id = res.body.data.id;
    expect(await acct(src)).toMatchObject({ balance: '500.00', available_balance: '299.00' });
    await dispatchPendingPayouts(t.db, cfg);
    const failed = await api.post(`/v1/simulations/transfers/${id}/fail`, { reason: 'Account closed' });
    expect(failed.status).toBe(200);
    expect(failed.body.data).toMatchObject({ transfer_status: 'failed', failure_reason: 'Account closed' });
    expect(await acct(src)).toMatchObject({ balance: '500.00', available_balance: '500.00' });
    for (const action of ['fail', 'complete', 'return']) {
      const again = await api.post(`/v1/simulations/transfers/${id}/${action}`, {});
      expect(again.status, action).toBe(409);
      expect(again.body.error.code).toBe('invalid_state_transition');
    }
    await settleDueSandboxPayouts(t.db);
    expect(await acct(src)).toMatchObject({ balance: '500.00', available_balance: '500.00' });
    const txs = await txOf(src);
    expect(txs.find((x: { reference: string }) => x.reference === id).status).toBe('failed');
    expect(await eventsOf(id)).toEqual(['transfer.status.pending', 'transfer.status.processing', 'transfer.status.failed']);
    await reconciled();
  });

  it('a simulation can fail a payout still pending (never dispatched)', async () => {
    const src = await account('NGN', '500.00');
    const id = (await api.post('/v1/transfer', payout(src, await payee(), '100.00'))).body.data.id;
    expect((await api.post(`/v1/simulations/transfers/${id}/fail`)).body.data.transfer_status).toBe('failed');
    await dispatchPendingPayouts(t.db, cfg);
    expect((await api.get(`/v1/transfers/${id}`)).body.data.transfer_status).toBe('failed');
    expect(await acct(src)).toMatchObject({ balance: '500.00', available_balance: '500.00' });
    await reconciled();
  });

  it('a return after completion is a reversing transaction; the fee stays earned', async () => {
    const src = await account('NGN', '1000.00');
    const id = (await api.post('/v1/transfer', payout(src, await payee(), '400.00'))).body.data.id;
    expect((await api.post(`/v1/simulations/transfers/${id}/complete`)).body.data.transfer_status).toBe('completed');
    expect(await acct(src)).toMatchObject({ balance: '598.00', available_balance: '598.00' });
    const ret = await api.post(`/v1/simulations/transfers/${id}/return`, { reason: 'Beneficiary name mismatch' });
    expect(ret.body.data).toMatchObject({ transfer_status: 'returned', failure_reason: 'Beneficiary name mismatch' });
    expect(await acct(src)).toMatchObject({ balance: '998.00', available_balance: '998.00' });
    const [credit, debit] = await txOf(src);
    expect(credit).toMatchObject({
      direction: 'in',
      amount: '400.00',
      transaction_type: 'credit',
      status: 'completed',
      balance_before: '598.00',
      balance_after: '998.00',
      reference: id,
    });
    expect(debit).toMatchObject({ direction: 'out', status: 'completed', reference: id });
    expect((await api.post(`/v1/simulations/transfers/${id}/return`)).status).toBe(409);
    expect(await eventsOf(id)).toEqual([
      'transfer.status.pending',
      'transfer.status.processing',
      'transfer.status.completed',
      'transfer.status.returned',
    ]);
    await reconciled();
  });

  it('a return before settlement releases the hold', async () => {
    const src = await account('NGN', '300.00');
    const id = (await api.post('/v1/transfer', payout(src, await payee(), '100.00'))).body.data.id;
    await dispatchPendingPayouts(t.db, cfg);
    expect((await api.post(`/v1/simulations/transfers/${id}/return`)).body.data.transfer_status).toBe('returned');
    expect(await acct(src)).toMatchObject({ balance: '300.00', available_balance: '300.00' });
    await reconciled();
  });
});

describe('international payouts', () => {
  beforeAll(async () => {
    await enableInternationalTransfers(api, customerId);
    // The sandbox market (the FX module's rates) decides payout rates too.
    for (const [quote, rate] of [
      ['NGN', '1500'],
      ['GHS', '15.5'],
    ]) {
      const res = await api.post('/v1/simulations/fx/rates', { base: 'USD', quote, rate });
      expect(res.status, res.text).toBe(200);
    }
  });

  it('pays a bank in NGN from USD at a locked rate, both legs through the FX positions', async () => {
    const src = await account('USD', '1000.00');
    const dest = await payee();
    const res = await api.post('/v1/transfer', payout(src, dest, '100.01'));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // mid 1500 NGN per USD less a 50 bps spread = 1492.50 (FX rate format); 100.01 * 1492.5 = 149264.925 -> 149264.92
    expect(res.body.data).toMatchObject({
      amount: '100.01',
      currency: 'USD',
      fee: '0.50',
      local_amount: '149264.92',
      local_currency: 'NGN',
      rate: '1492.50',
    });
    expect(await acct(src)).toMatchObject({ balance: '1000.00', available_balance: '899.49' });
    await api.post(`/v1/simulations/transfers/${res.body.data.id}/complete`);
    expect(await acct(src)).toMatchObject({ balance: '899.49', available_balance: '899.49' });
    const s = scope();
    const usdPos = await ledger.getBalance(t.db, s, await ledger.systemAccount(t.db, s, 'fx_position', 'USD'));
    const ngnPos = await ledger.getBalance(t.db, s, await ledger.systemAccount(t.db, s, 'fx_position', 'NGN'));
    expect(usdPos?.posted).toBe(10001n);
    expect(ngnPos?.posted).toBe(-14926492n);
    await reconciled();

    const ret = await api.post(`/v1/simulations/transfers/${res.body.data.id}/return`);
    expect(ret.body.data.transfer_status).toBe('returned');
    expect(await acct(src)).toMatchObject({ balance: '999.50' });
    expect((await ledger.getBalance(t.db, s, await ledger.systemAccount(t.db, s, 'fx_position', 'NGN')))?.posted).toBe(0n);
    await reconciled();

    // The operator console's "Ledger entries" of this payout: every entry of every posting naming it.
    const row = await t.db.selectFrom('transfers').selectAll().where('id', '=', res.body.data.id).executeTakeFirstOrThrow();
    const named = await t.db
      .selectFrom('ledger_entries')
      .innerJoin('ledger_transactions', 'ledger_transactions.id', 'ledger_entries.transaction_id')
      .select(['ledger_entries.id', 'ledger_transactions.kind'])
      .where('ledger_transactions.reference', '=', row.id)
      .orderBy('ledger_entries.id')
      .execute();
    expect(new Set(named.map((e) => e.kind))).toEqual(new Set(['payout', 'payout_fee', 'payout_fx', 'payout_return']));
    const shown = await ledgerEntriesOf(t.db, s, row);
    expect(shown.map((e) => [e.id, e.kind])).toEqual(named.map((e) => [e.id, e.kind]));
  });

  it('pays a mobile money wallet in GHS', async () => {
    const src = await account('USD', '50.00');
    const dest = await payee({
      payee_type: 'mobile_money',
      phone_number: '+233241234567',
      account_number: undefined,
      currency: 'GHS',
      institution_id: mtnGh.id,
    });
    const res = await api.post('/v1/transfer', payout(src, dest, '10'));
    expect(res.body.data).toMatchObject({
      local_currency: 'GHS',
      local_amount: '154.22',
      rate: '15.4225',
      destination: { rail: 'mobile_money' },
    });
    await dispatchPendingPayouts(t.db, cfg);
    await settleDueSandboxPayouts(t.db);
    expect((await api.get(`/v1/transfers/${res.body.data.id}`)).body.data.transfer_status).toBe('completed');
    await reconciled();
  });
});

describe('payout errors change nothing', () => {
  it('answers each error with its code', async () => {
    const src = await account('NGN', '1000.00');
    const dest = await payee();
    const cases: [unknown, number, string][] = [
      [payout(src, await payee({}, false), '10'), 409, 'account_inactive'],
      [payout(src, dest, '10', { additional_information: undefined }), 400, 'validation_failed'],
      [
        payout(src, dest, '10', {
          additional_information: { ...remitter, remitter_address: { ...remitter.remitter_address, state: 'NY' } },
        }),
        400,
        'validation_failed',
      ],
      [
        payout(src, dest, '10', { destination: { destination_type: 'external_account', id: dest, rail: 'swift' } }),
        400,
        'validation_failed',
      ],
      [payout(src, dest, '5000.00'), 422, 'insufficient_funds'],
      [payout(src, dest, '99.99'), 422, 'limit_exceeded'],
      [payout(src, dest, '10', { currency: 'USD' }), 422, 'currency_mismatch'],
      [payout(src, dest, '10.001'), 400, 'invalid_amount'],
      [payout(src, '0190a5b0-0000-7000-8000-000000000000', '10'), 404, 'not_found'],
      [payout(src, dest, '10', { destination: { destination_type: 'external_account' } }), 400, 'validation_failed'],
    ];
    for (const [body, status, code] of cases) {
      const res = await api.post('/v1/transfer', body);
      expect(res.status, JSON.stringify(res.body)).toBe(status);
      expect(res.body.error.code).toBe(code);
    }
    expect(await acct(src)).toMatchObject({ balance: '1000.00', available_balance: '1000.00' });
    const otherPayee = await other.post('/v1/transfer', payout(src, dest, '10'));
    expect(otherPayee.status).toBe(404);
    await reconciled();
  });

  it('simulations: sandbox only, 404 elsewhere, 409 for internal transfers', async () => {
    const src = await account('NGN', '1000.00');
    const id = (await api.post('/v1/transfer', payout(src, await payee(), '100.00'))).body.data.id;
    expect((await live.post(`/v1/simulations/transfers/${id}/complete`)).status).toBe(404);
    expect((await other.post(`/v1/simulations/transfers/${id}/complete`)).status).toBe(404);
    expect((await api.post('/v1/simulations/transfers/0190a5b0-0000-7000-8000-000000000000/complete')).status).toBe(404);
    expect((await api.post(`/v1/simulations/transfers/${id}/complete`, { reason: 'x', extra: 1 })).status).toBe(400);
    const b = await account('NGN');
    const internal = (
      await api.post('/v1/transfer', {
        ...payout(src, b, '1'),
        destination: { destination_type: 'internal_account', id: b },
        additional_information: undefined,
      })
    ).body.data.id;
    expect((await api.post(`/v1/simulations/transfers/${internal}/fail`)).status).toBe(409);
  });

  it('uses the business fee and limit settings per rail', async () => {
    const feeTenant = await t.tenant('Fees Ltd');
    await setSettings(t.db, feeTenant.tenant_id, {
      fees: { payout_bank_transfer: { NGN: { flat: '25.00' } } },
      payout_limits: { bank_transfer: { NGN: '150.00' } },
    });
    const fees = clientFor(t, feeTenant.sandbox.secret_key);
    const cust = (await fees.post('/v1/customers', johnDoe())).body.data.id;
    await approveKyc(fees, cust);
    const src = (await fees.post('/v1/accounts', { currency: 'NGN', label: 'f', customer_id: cust })).body.data.id;
    await fees.post(`/v1/simulations/accounts/${src}/fund`, { amount: '1000.00' });
    const dest = (
      await fees.post('/v1/external-accounts', {
        payee_type: 'bank_account',
        account_number: nuban(),
        account_name: 'A B',
        currency: 'NGN',
        customer_id: cust,
        institution_id: gtb.id,
      })
    ).body.data.id;
    await verifyDuePayees(t.db, t.unitOfWork, cfg);
    const body = (amount: string) => ({ ...payout(src, dest, amount), customer_id: cust });
    expect((await fees.post('/v1/transfer', body('151.00'))).body.error.code).toBe('limit_exceeded');
    const ok = await fees.post('/v1/transfer', body('150.00'));
    expect(ok.body.data.fee).toBe('25.00');
    expect((await fees.get(`/v1/accounts/${src}`)).body.data.available_balance).toBe('825.00');
  });
});

describe('live: the manual connector, settled by an operator', () => {
  it('waits for the operator, who settles or fails from the CLI path', async () => {
    const { operatorOutcome } = await import('../../src/modules/transfers/payout-operator.js');
    const liveCustomer = (await live.post('/v1/customers', johnDoe())).body.data.id;
    await approveKycLive(t.db, tenantId, live, liveCustomer);
    const src = (await live.post('/v1/accounts', { currency: 'NGN', label: 'live', customer_id: liveCustomer })).body.data.id;
    // No funding simulation in live: credit the account straight through the ledger for the test.
    const ls = { tenantId, environment: 'live' as const };
    await t.db.transaction().execute(async (trx) =>
      ledger.post(trx, ls, {
        kind: 'funding',
        legs: [
          { accountId: await ledger.systemAccount(trx, ls, 'settlement', 'NGN'), amount: -100000n, currency: 'NGN' },
          { accountId: src, amount: 100000n, currency: 'NGN' },
        ],
      }),
    );
    const dest = (
      await live.post('/v1/external-accounts', {
        payee_type: 'bank_account',
        account_number: nuban(),
        account_name: 'Live Payee',
        currency: 'NGN',
        customer_id: liveCustomer,
        institution_id: gtb.id,
      })
    ).body.data.id;
    await verifyDuePayees(t.db, t.unitOfWork, cfg);
    expect((await live.get(`/v1/external-accounts/${dest}`)).body.data.status).toBe('active');
    const body = { ...payout(src, dest, '100.00'), customer_id: liveCustomer };
    const a = (await live.post('/v1/transfer', body)).body.data.id;
    const b = (await live.post('/v1/transfer', body)).body.data.id;
    await dispatchPendingPayouts(t.db, cfg);
    await settleDueSandboxPayouts(t.db);
    expect((await live.get(`/v1/transfers/${a}`)).body.data.transfer_status).toBe('processing');
    expect((await t.db.transaction().execute((trx) => operatorOutcome(trx, a, 'settled', null, cfg))).transfer_status).toBe('completed');
    await expect(t.db.transaction().execute((trx) => operatorOutcome(trx, a, 'settled', null, cfg))).rejects.toMatchObject({
      code: 'invalid_state_transition',
    });
    expect(
      (await t.db.transaction().execute((trx) => operatorOutcome(trx, b, 'failed', 'Beneficiary bank offline', cfg))).failure_reason,
    ).toBe('Beneficiary bank offline');
    expect((await live.get(`/v1/accounts/${src}`)).body.data).toMatchObject({ balance: '899.50', available_balance: '899.50' });
    await expect(
      t.db.transaction().execute((trx) => operatorOutcome(trx, '0190a5b0-0000-7000-8000-000000000000', 'settled', null, cfg)),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
    const sandboxSrc = await account('NGN', '200.00');
    const sandboxId = (await api.post('/v1/transfer', payout(sandboxSrc, await payee(), '150.00'))).body.data.id;
    await dispatchPendingPayouts(t.db, cfg);
    await expect(t.db.transaction().execute((trx) => operatorOutcome(trx, sandboxId, 'settled', null, cfg))).rejects.toMatchObject({
      code: 'invalid_state_transition',
    });
    expect((await ledger.reconcile(t.db, tenantId)).ok).toBe(true);
  });
});

describe('races and delays', () => {
  it('a payout settles on its own only after the sandbox delay', async () => {
    const src = await account('NGN', '500.00');
    const id = (await api.post('/v1/transfer', payout(src, await payee(), '100.00'))).body.data.id;
    await dispatchPendingPayouts(t.db, { SANDBOX_RAIL_DELAY_MS: 60_000 });
    await settleDueSandboxPayouts(t.db);
    expect((await api.get(`/v1/transfers/${id}`)).body.data.transfer_status).toBe('processing');
    await t.db
      .updateTable('rail_payouts')
      .set({ settle_after: new Date(Date.now() - 1) })
      .where('transfer_id', '=', id)
      .execute();
    await settleDueSandboxPayouts(t.db);
    expect((await api.get(`/v1/transfers/${id}`)).body.data.transfer_status).toBe('completed');
  });

  it('concurrent outcomes for one payout: exactly one wins, the money moves once', async () => {
    const src = await account('NGN', '1000.00');
    const id = (await api.post('/v1/transfer', payout(src, await payee(), '200.00'))).body.data.id;
    await dispatchPendingPayouts(t.db, cfg);
    const results = await Promise.all([
      api.post(`/v1/simulations/transfers/${id}/complete`),
      api.post(`/v1/simulations/transfers/${id}/fail`),
      api.post(`/v1/simulations/transfers/${id}/complete`),
      settleDueSandboxPayouts(t.db).then(() => ({ status: 0 })),
    ]);
    const statuses = results.slice(0, 3).map((r) => r.status);
    const final = (await api.get(`/v1/transfers/${id}`)).body.data.transfer_status;
    expect(['completed', 'failed']).toContain(final);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(await acct(src)).toMatchObject(
      final === 'completed' ? { balance: '799.00', available_balance: '799.00' } : { balance: '1000.00', available_balance: '1000.00' },
    );
    await reconciled();
  });
});
