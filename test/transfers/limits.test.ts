import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pipelined } from '../../src/db/pipeline.js';
import { newId } from '../../src/lib/ids.js';
import { reconcile } from '../../src/ledger/index.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { nubanCheckDigit } from '../../src/lib/payee-validation.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { SpendingGate } from '../../src/modules/transfers/limits.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc, enableInternationalTransfers } from '../kyc-helpers.js';
import { planCounts } from '../plans.js';

/**
 * KYC gates on money leaving a customer's account through POST /v1/transfer: no approved KYC is
 * 403 kyc_level_insufficient, above the level's limits 422 limit_exceeded, a payout abroad needs
 * international_transfers; each refusal changes nothing. The business's own accounts are free.
 */
let t: TestApp;
let api: Client;
let tenantId: string;
const cfg = { SANDBOX_RAIL_DELAY_MS: 0 };
const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
const remitter = {
  remitter_full_name: 'John Doe',
  remitter_country: 'US',
  remitter_document_number: 'A123456789',
  remitter_date_of_birth: '1990-06-25',
  remitter_nationality: 'US',
  remitter_address: { address_line1: '123 Main Street', city: 'New York', state: 'US-NY', postal_code: '10001', country: 'US' },
};

let serial = 300000;
const nuban = () => {
  const s = `${serial++}123`;
  return s + String(nubanCheckDigit('058', s));
};

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Limits Ltd');
  tenantId = tenant.tenant_id;
  // Small limits so the tests stay readable: NGN 100 a transfer / 250 a day at basic, ten times at intermediate.
  await setSettings(t.db, tenantId, {
    kyc_limits: {
      basic: { NGN: { per_transaction: '100.00', daily: '250.00' }, USD: { per_transaction: '100.00', daily: '250.00' } },
      intermediate: { NGN: { per_transaction: '1000.00', daily: '2500.00' }, USD: { per_transaction: '1000.00', daily: '2500.00' } },
    },
  });
  api = clientFor(t, tenant.sandbox.secret_key);
});
afterAll(async () => t?.close());

const customer = async () => (await api.post('/v1/customers', johnDoe())).body.data.id as string;

async function account(currency: string, customerId: string | null, fund?: string) {
  const a = (await api.post('/v1/accounts', { currency, label: 'acc', ...(customerId ? { customer_id: customerId } : {}) })).body.data;
  if (fund) expect((await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund })).status).toBe(200);
  return a.id as string;
}

async function payee(customerId: string, currency = 'NGN') {
  const res = await api.post('/v1/external-accounts', {
    payee_type: 'bank_account',
    account_number: nuban(),
    account_name: 'Amina Bello',
    currency,
    customer_id: customerId,
    institution_id: gtb.id,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  await verifyDuePayees(t.db, t.unitOfWork, cfg);
  return res.body.data.id as string;
}

const internal = (source: string, destination: string, amount: string) => ({
  source: { source_type: 'internal_account', id: source },
  destination: { destination_type: 'internal_account', id: destination },
  amount,
});
const payout = (source: string, destination: string, amount: string) => ({
  source: { source_type: 'internal_account', id: source },
  destination: { destination_type: 'external_account', id: destination },
  amount,
  additional_information: remitter,
});

/** Everything a refused transfer must leave alone. */
async function snapshot(...accountIds: string[]) {
  const out = [];
  for (const id of accountIds) {
    const acct = (await api.get(`/v1/accounts/${id}`)).body.data;
    out.push({
      balance: acct.balance,
      available: acct.available_balance,
      transactions: (await api.get(`/v1/transactions?account_id=${id}`)).body.data.total_items,
      transfers: (await api.get(`/v1/transfers?account_id=${id}`)).body.data.total_items,
    });
  }
  return out;
}

describe('without approved KYC', () => {
  it('refuses internal transfers and payouts with 403 kyc_level_insufficient, moving nothing', async () => {
    const cust = await customer();
    const a = await account('NGN', cust, '500.00');
    const b = await account('NGN', cust);
    const dest = await payee(cust);
    const before = await snapshot(a, b);

    const key = `kyc-${Date.now()}`;
    const res = await api.post('/v1/transfer', internal(a, b, '10.00'), { idempotencyKey: key });
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body.error.code).toBe('kyc_level_insufficient');
    const out = await api.post('/v1/transfer', payout(a, dest, '100.00'));
    expect(out.status, JSON.stringify(out.body)).toBe(403);
    expect(out.body.error.code).toBe('kyc_level_insufficient');
    expect(await snapshot(a, b)).toEqual(before);

    // A 403 is not stored: once KYC is approved the same key runs afresh.
    await approveKyc(api, cust);
    const retry = await api.post('/v1/transfer', internal(a, b, '10.00'), { idempotencyKey: key });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect((await api.get(`/v1/accounts/${a}`)).body.data.balance).toBe('490.00');
  });
});

describe('limits per KYC level', () => {
  it('refuses above the per-transaction limit with 422 limit_exceeded, moving nothing', async () => {
    const cust = await customer();
    await approveKyc(api, cust);
    const a = await account('NGN', cust, '1000.00');
    const b = await account('NGN', cust);
    const dest = await payee(cust);
    const before = await snapshot(a, b);
    for (const body of [internal(a, b, '100.01'), payout(a, dest, '100.01')]) {
      const res = await api.post('/v1/transfer', body);
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({ code: 'limit_exceeded', details: [{ field: 'amount', code: 'per_transaction_limit' }] });
    }
    expect(await snapshot(a, b)).toEqual(before);
    expect((await api.post('/v1/transfer', internal(a, b, '100.00'))).status).toBe(200);
  });

  it('counts what the customer sent today across accounts and paths; failed payouts give the room back', async () => {
    const cust = await customer();
    await approveKyc(api, cust);
    const a = await account('NGN', cust, '1000.00');
    const a2 = await account('NGN', cust, '1000.00');
    const b = await account('NGN', cust);
    const dest = await payee(cust);
    expect((await api.post('/v1/transfer', internal(a, b, '100.00'))).status).toBe(200);
    const pending = await api.post('/v1/transfer', payout(a2, dest, '100.00'));
    expect(pending.body.data.transfer_status).toBe('pending'); // pending payouts count too

    const before = await snapshot(a, a2, b);
    const over = await api.post('/v1/transfer', internal(a2, b, '50.01'));
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'limit_exceeded', details: [{ field: 'amount', code: 'daily_limit' }] });
    expect(await snapshot(a, a2, b)).toEqual(before);

    // Any of the customer's accounts counts: 250.00 sent today, exactly at the limit.
    expect((await api.post('/v1/transfer', internal(b, a, '50.00'))).status).toBe(200);
    expect((await api.post('/v1/transfer', internal(a, b, '0.01'))).body.error.code).toBe('limit_exceeded');
    expect((await api.post(`/v1/simulations/transfers/${pending.body.data.id}/fail`)).status).toBe(200);
    expect((await api.post('/v1/transfer', internal(a, b, '100.00'))).status).toBe(200);
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('concurrent transfers from several accounts of one customer pass the daily limit together at most', async () => {
    const customers = [await customer(), await customer()];
    for (const c of customers) await approveKyc(api, c);
    const sources = await Promise.all(customers.flatMap((c) => [1, 2, 3, 4, 5].map(() => account('NGN', c, '200.00'))));
    const sink = await account('NGN', null); // shared by all: the batcher's locks and the limit locks meet here
    const results = await Promise.all(sources.map((s) => api.post('/v1/transfer', internal(s, sink, '100.00'))));
    const outcome = results.map((r) => [r.status, r.body.error?.code ?? null]);
    expect(
      outcome.filter(([s]) => s === 200),
      JSON.stringify(outcome),
    ).toHaveLength(4); // 2 x 100.00 each, daily limit 250.00
    expect(
      outcome.filter(([s, c]) => s === 422 && c === 'limit_exceeded'),
      JSON.stringify(outcome),
    ).toHaveLength(6);
    for (const c of customers) {
      const sent = (await api.get(`/v1/transfers?customer_id=${c}&status=completed`)).body.data.total_items;
      expect(sent).toBe(2);
    }
    expect((await api.get(`/v1/accounts/${sink}`)).body.data.balance).toBe('400.00');
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('allows an intermediate customer more', async () => {
    const basic = await customer();
    await approveKyc(api, basic);
    const inter = await customer();
    await approveKyc(api, inter, 'intermediate');
    const [ba, bb] = [await account('NGN', basic, '5000.00'), await account('NGN', basic)];
    const [ia, ib] = [await account('NGN', inter, '5000.00'), await account('NGN', inter)];
    expect((await api.post('/v1/transfer', internal(ba, bb, '500.00'))).body.error.code).toBe('limit_exceeded');
    expect((await api.post('/v1/transfer', internal(ia, ib, '1000.00'))).status).toBe(200);
    expect((await api.post('/v1/transfer', internal(ia, ib, '1000.00'))).status).toBe(200);
    expect((await api.post('/v1/transfer', internal(ia, ib, '500.01'))).body.error).toMatchObject({
      code: 'limit_exceeded',
      details: [{ code: 'daily_limit' }],
    });
    expect((await api.get(`/v1/accounts/${ib}`)).body.data.balance).toBe('2000.00');
  });

  it('does not limit the business own accounts', async () => {
    const cust = await customer();
    const own = await account('NGN', null, '100000.00');
    const own2 = await account('NGN', null);
    const theirs = await account('NGN', cust); // paying a customer without KYC is the business's call
    for (let i = 0; i < 3; i++) expect((await api.post('/v1/transfer', internal(own, own2, '10000.00'))).status).toBe(200);
    expect((await api.post('/v1/transfer', internal(own, theirs, '10000.00'))).status).toBe(200);
    const dest = await payee(cust);
    expect((await api.post('/v1/transfer', payout(own, dest, '10000.00'))).status).toBe(200);
    expect((await api.get(`/v1/accounts/${own2}`)).body.data.balance).toBe('30000.00');
    expect((await api.get(`/v1/accounts/${theirs}`)).body.data.balance).toBe('10000.00');
  });
});

describe('international payouts', () => {
  it('need international_transfers for a customer: refused with 403 feature_not_active, then allowed', async () => {
    const cust = await customer();
    await approveKyc(api, cust);
    const usd = await account('USD', cust, '500.00');
    const ngnPayee = await payee(cust, 'NGN');
    const before = await snapshot(usd);
    const res = await api.post('/v1/transfer', payout(usd, ngnPayee, '50.00'));
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'feature_not_active', details: [{ field: 'feature_id' }] });
    expect(await snapshot(usd)).toEqual(before);

    await enableInternationalTransfers(api, cust);
    const ok = await api.post('/v1/transfer', payout(usd, ngnPayee, '50.00'));
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data).toMatchObject({ currency: 'USD', local_currency: 'NGN', transfer_status: 'pending' });
    // Same-currency payouts never needed the feature.
    const other = await customer();
    await approveKyc(api, other);
    const ngn = await account('NGN', other, '200.00');
    expect((await api.post('/v1/transfer', payout(ngn, await payee(other), '100.00'))).status).toBe(200);
  });

  it('need international_transfers on the swift rail even in the same currency', async () => {
    const cust = await customer();
    await approveKyc(api, cust);
    const usd = await account('USD', cust, '500.00');
    const created = await api.post('/v1/external-accounts', {
      payee_type: 'swift',
      account_owner_type: 'individual',
      account_number: '1245909283',
      account_name: 'Amina Bello',
      bic: 'GTBINGLA',
      currency: 'USD',
      customer_id: cust,
      address: { address_line1: '1 Broad Street', city: 'Lagos', postal_code: '101001', state: 'NG-LA', country: 'NG' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    await verifyDuePayees(t.db, t.unitOfWork, cfg);
    const body = { ...payout(usd, created.body.data.id, '20.00'), additional_information: undefined };
    expect((await api.post('/v1/transfer', body)).body.error.code).toBe('feature_not_active');
    await enableInternationalTransfers(api, cust);
    const ok = await api.post('/v1/transfer', body);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.destination).toMatchObject({ rail: 'swift' });
  });
});

describe("a batch's spending gate", () => {
  // Prepared statements are per connection, and a transaction keeps one: its gates share a plan cache.
  it.skipIf(process.env.DATABASE_URL === undefined)(
    "reads today's counters on one generic plan, not planned anew for every batch",
    async () => {
      const plans = await planCounts(t.db, '%from customer_daily_spend s%join unnest%', async (trx, i) => {
        const senders = Array.from({ length: 1 + (i % 3) }, () => ({
          ctx: { tenantId, environment: 'sandbox' as const },
          customerId: newId(),
          currency: 'NGN',
        }));
        const plan = SpendingGate.plan(trx, t.config, senders);
        plan.open(await pipelined(trx, ...plan.statements));
      });
      // Every execution on a generic plan (the connection may have named the statement at its first or second use).
      expect(plans).toHaveLength(1);
      expect(plans[0]!.custom_plans).toBe(0);
      expect(plans[0]!.generic_plans).toBeGreaterThanOrEqual(6);
    },
  );
});
