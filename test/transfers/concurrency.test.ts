import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Trx } from '../../src/db/client.js';
import { reconcile } from '../../src/ledger/index.js';
import * as accounts from '../../src/modules/accounts/service.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp, type TestResponse } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';
import { nubans, payoutBody, verifiedPayee } from '../payout-fixtures.js';
import { waitersAtLeast } from '../row-locks.js';

/**
 * Many transfers race for one balance. On PostgreSQL they really run in parallel (pool of 10);
 * on PGlite they queue. Either way: exact final balance, no overdraft, one effect per key.
 */
let t: TestApp;
let api: Client;
let tenantId: string;
beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Race');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
});
afterAll(async () => t?.close());

const body = (from: string, to: string, amount: string) => ({
  source: { source_type: 'internal_account', id: from },
  destination: { destination_type: 'internal_account', id: to },
  amount,
});

describe('concurrent transfers', () => {
  it('never overdraws a contested balance', async () => {
    const hot = (await api.post('/v1/accounts', { currency: 'NGN', label: 'hot' })).body.data.id;
    await api.post(`/v1/simulations/accounts/${hot}/fund`, { amount: '100.00' });
    const sinks: string[] = [];
    for (let i = 0; i < 5; i++) sinks.push((await api.post('/v1/accounts', { currency: 'NGN', label: `s${i}` })).body.data.id);
    // Transfers in both directions between the sinks too, to exercise lock ordering.
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        i % 6 === 5
          ? api.post('/v1/transfers', body(sinks[i % 5]!, sinks[(i + 1) % 5]!, '0.01'))
          : api.post('/v1/transfers', body(hot, sinks[i % 5]!, '3.00')),
      ),
    );
    const fromHot = results.filter((_, i) => i % 6 !== 5);
    const ok = fromHot.filter((r) => r.status === 200).length;
    expect(ok).toBe(33);
    expect(fromHot.filter((r) => r.status === 422 && r.body.error.code === 'insufficient_funds')).toHaveLength(50 - 33);
    expect((await api.get(`/v1/accounts/${hot}`)).body.data.balance).toBe('1.00');
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('payouts and transfers racing for one balance: holds and postings never overdraw it together', async () => {
    // A customer's account paying the customer's payee, with a flat payout fee and room under the KYC limits.
    await setSettings(t.db, tenantId, {
      fees: { payout_bank_transfer: { NGN: { flat: '10.00' } } },
      kyc_limits: { basic: { NGN: { per_transaction: '100000.00', daily: '1000000.00' } } },
    });
    const customer = (await api.post('/v1/customers', johnDoe())).body.data.id as string;
    await approveKyc(api, customer);
    const payee = await verifiedPayee(t, api, customer, nubans(800000)());
    const hot = (await api.post('/v1/accounts', { currency: 'NGN', label: 'payroll', customer_id: customer })).body.data.id;
    await api.post(`/v1/simulations/accounts/${hot}/fund`, { amount: '1000.00' });
    const sink = (await api.post('/v1/accounts', { currency: 'NGN', label: 'sink' })).body.data.id;
    const payout = payoutBody(hot, payee, '100.00');
    // 20 payouts of 110.00 (with the fee) and 20 transfers of 50.00 race for 1,000.00.
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => api.post('/v1/transfers', i % 2 === 0 ? payout : body(hot, sink, '50.00'))),
    );
    const spent = results.reduce((sum, r, i) => sum + (r.status === 200 ? (i % 2 === 0 ? 11000 : 5000) : 0), 0);
    expect(results.every((r) => r.status === 200 || (r.status === 422 && r.body.error.code === 'insufficient_funds'))).toBe(true);
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0);
    // Whatever the interleaving, what was accepted fits, and nothing more would have.
    expect(spent).toBeLessThanOrEqual(100000);
    expect(100000 - spent).toBeLessThan(5000);
    const account = (await api.get(`/v1/accounts/${hot}`)).body.data;
    expect(account.available_balance).toBe(((100000 - spent) / 100).toFixed(2));
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('a transfer that waits for a freeze reads the account frozen, though it takes no lock on the account row (migration 1266)', async () => {
    // The source has sent before, so this process knows it: the batch locks everything ahead and
    // reads the account rows after its balance locks (transfers/locks.ts lockedAhead), with no row
    // lock of their own. Read before the balance locks, it would see the account active and post.
    const source = (await api.post('/v1/accounts', { currency: 'NGN', label: 'to freeze' })).body.data.id;
    const sink = (await api.post('/v1/accounts', { currency: 'NGN', label: 'sink' })).body.data.id;
    await api.post(`/v1/simulations/accounts/${source}/fund`, { amount: '10.00' });
    expect((await api.post('/v1/transfers', body(source, sink, '1.00'))).status).toBe(200);
    let during!: Promise<TestResponse>;
    await t.db.transaction().execute(async (trx) => {
      await accounts.updateStatus(trx, { tenantId, environment: 'sandbox' }, source, 'frozen');
      during = api.post('/v1/transfers', body(source, sink, '1.00'));
      // On PostgreSQL the transfer waits for the freeze's locks; on PGlite, for its one connection.
      if (t.dbKind === 'postgres') await waitersAtLeast(t.db, 1);
    });
    const refused = await during;
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('account_frozen');
    expect((await api.get(`/v1/accounts/${source}`)).body.data.balance).toBe('9.00');
  });

  it('a status change written in SQL, by anyone, holds the balance row until it commits (migration 1266)', async () => {
    const id = (await api.post('/v1/accounts', { currency: 'NGN', label: 'status in sql' })).body.data.id;
    // The balance row's lock (ledger_balance_lock_key, migration 1266): an advisory lock, which
    // pg_locks shows with the key's high and low 32 bits.
    const lockedBy = async (trx: Trx) => {
      const { rows } = await sql<{ held: boolean }>`
        select exists (
          select 1 from pg_locks l, ledger_balance_lock_key(${id}) as k
          where l.locktype = 'advisory' and l.pid = pg_backend_pid() and l.granted and l.objsubid = 1
            and l.classid::text::bigint = (k >> 32) & 4294967295 and l.objid::text::bigint = k & 4294967295) as held`.execute(trx);
      return rows[0]!.held;
    };
    await t.db.transaction().execute(async (trx) => {
      await sql`update accounts set label = 'renamed' where id = ${id}`.execute(trx);
      expect(await lockedBy(trx)).toBe(false);
      await sql`update accounts set status = 'frozen' where id = ${id}`.execute(trx);
      expect(await lockedBy(trx)).toBe(true);
    });
  });

  it('gives one effect for parallel requests with the same key', async () => {
    const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'a' })).body.data.id;
    const b = (await api.post('/v1/accounts', { currency: 'NGN', label: 'b' })).body.data.id;
    await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '10.00' });
    const results = await Promise.all(
      Array.from({ length: 10 }, () => api.post('/v1/transfer', body(a, b, '1.00'), { idempotencyKey: `same-${a}` })),
    );
    for (const r of results) expect([200, 409]).toContain(r.status);
    expect((await api.get(`/v1/accounts/${b}`)).body.data.balance).toBe('1.00');
    expect((await api.get(`/v1/transfers?account_id=${a}`)).body.data.total_items).toBe(1);
  });
});
