import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import { clientFor, startTestApp, type Client, type TestApp, deadlocksDuring } from '../harness.js';

/**
 * POST /v1/transfers/bulk: up to 1,000 internal transfers, each decided on its own (never
 * all-or-nothing), idempotent as a whole; GET /v1/transfers/bulk/{id} shows it again.
 */
let t: TestApp;
let api: Client;
let tenantId: string;
beforeAll(async () => {
  // Bulks side by side (the default works one at a time per process): the deadlock test below needs two at once.
  t = await startTestApp({ TRANSFER_BULK_CONCURRENCY: 4 });
  const tenant = await t.tenant('Payroll Ltd');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
});
afterAll(async () => t?.close());

async function account(fund?: string) {
  const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'payroll' })).body.data;
  if (fund) expect((await api.post(`/v1/simulations/accounts/${a.id}/fund`, { amount: fund })).status).toBe(200);
  return a.id as string;
}

const item = (from: string, to: string, amount: string, ref: string) => ({
  source: { id: from },
  destination: { destination_type: 'internal_account', id: to },
  amount,
  client_reference: ref,
});
const balanceOf = async (id: string) => (await api.get(`/v1/accounts/${id}`)).body.data.balance as string;

describe('bulk transfers', () => {
  it('answers each item with its own outcome and moves exactly the completed ones', async () => {
    const payer = await account('100.00');
    const [a, b] = [await account(), await account()];
    const body = {
      description: 'November payroll',
      transfers: [
        item(payer, a, '60.00', 'emp-1'),
        item(payer, b, '50.00', 'emp-2'), // 40.00 left: insufficient funds
        item(payer, b, '40.00', 'emp-3'), // exactly what is left
        item(payer, payer, '1.00', 'emp-4'), // source = destination
        item(payer, '00000000-0000-7000-8000-000000000000', '1.00', 'emp-5'), // no such account
      ],
    };
    const res = await api.post('/v1/transfers/bulk', body, { idempotencyKey: `bulk-${tenantId}` });
    expect(res.status, res.text).toBe(200);
    const bulk = res.body.data;
    expect(bulk).toMatchObject({ status: 'completed', total_items: 5, succeeded: 2, failed: 3, description: 'November payroll' });
    expect(bulk.items.map((i: { status: string; error: { code: string } | null }) => i.error?.code ?? i.status)).toEqual([
      'completed',
      'insufficient_funds',
      'completed',
      'validation_failed',
      'not_found',
    ]);
    expect(bulk.items[0].transfer).toMatchObject({ client_reference: 'emp-1', amount: '60.00', transfer_status: 'completed' });
    expect([await balanceOf(payer), await balanceOf(a), await balanceOf(b)]).toEqual(['0.00', '60.00', '40.00']);

    // Idempotent as a whole: the same key replays byte for byte and moves nothing more.
    const again = await api.post('/v1/transfers/bulk', body, { idempotencyKey: `bulk-${tenantId}` });
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.text).toBe(res.text);
    expect(await balanceOf(a)).toBe('60.00');

    const shown = await api.get(`/v1/transfers/bulk/${bulk.id}`);
    expect(shown.status).toBe(200);
    expect(shown.body.data).toEqual(bulk);
    const transfer = await api.get(`/v1/transfers/${bulk.items[2].transfer.id}`);
    expect(transfer.body.data.client_reference).toBe('emp-3');
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('refuses a file whose client_references repeat, or that is empty or too long (400, nothing moves)', async () => {
    const payer = await account('10.00');
    const to = await account();
    const dup = await api.post('/v1/transfers/bulk', { transfers: [item(payer, to, '1.00', 'x'), item(payer, to, '1.00', 'x')] });
    expect(dup.status).toBe(400);
    expect(dup.body.error.details).toEqual([expect.objectContaining({ field: 'transfers.1.client_reference', code: 'duplicate' })]);
    expect((await api.post('/v1/transfers/bulk', { transfers: [] })).status).toBe(400);
    const tooMany = Array.from({ length: 1001 }, (_, i) => item(payer, to, '0.01', `r${i}`));
    expect((await api.post('/v1/transfers/bulk', { transfers: tooMany })).status).toBe(400);
    expect(await balanceOf(payer)).toBe('10.00');
  });

  it('handles a long file across several batches', async () => {
    const payer = await account('10.00');
    const to = await account();
    const transfers = Array.from({ length: 600 }, (_, i) => item(payer, to, '0.01', `line-${i}`));
    const res = await api.post('/v1/transfers/bulk', { transfers });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ total_items: 600, succeeded: 600, failed: 0 });
    expect(await balanceOf(to)).toBe('6.00');
    expect(await balanceOf(payer)).toBe('4.00');
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });

  it('is scoped to its business', async () => {
    const other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
    const payer = await account('1.00');
    const res = await api.post('/v1/transfers/bulk', { transfers: [item(payer, await account(), '1.00', 'only')] });
    expect((await other.get(`/v1/transfers/bulk/${res.body.data.id}`)).status).toBe(404);
  });

  // Two bulks whose chunks (100 items each) name the same accounts in opposite order: before,
  // each chunk locked its own rows, so one bulk held d and waited for a while the other held a
  // and waited for d (the benchmark's 4 concurrent bulks got 503s after their retries). Now a bulk
  // of several chunks takes every lock it needs first, in the global order.
  it('concurrent bulks over the same accounts never deadlock', async () => {
    const [a, b, c, d] = (await Promise.all([1, 2, 3, 4].map(() => account('10000.00')))).sort();
    const half = (x: string, y: string, tag: string) => Array.from({ length: 250 }, (_, i) => item(x, y, '0.01', `${tag}-${i}`));
    const found = await deadlocksDuring(t, async () => {
      for (let round = 0; round < 3; round++) {
        const [x, y] = await Promise.all([
          api.post('/v1/transfers/bulk', { transfers: [...half(b!, d!, `x${round}`), ...half(a!, c!, `x${round}b`)] }),
          api.post('/v1/transfers/bulk', { transfers: [...half(a!, c!, `y${round}`), ...half(d!, b!, `y${round}b`)] }),
        ]);
        expect([x.status, y.status], `${x.text}\n${y.text}`).toEqual([200, 200]);
        expect([x.body.data.succeeded, y.body.data.succeeded]).toEqual([500, 500]);
      }
    });
    expect(found).toBe(0);
  }, 60_000);
});
