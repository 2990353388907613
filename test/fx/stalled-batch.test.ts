import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { besideAStalledBatch } from '../row-locks.js';

/**
 * FX market orders share batches as transfers do, and so a batch's spare lane (db/batcher.ts):
 * beside a stalled batch it must leave out an order on a row that batch holds, and take the ones
 * behind it. The fault: FX orders told the batcher nothing of what they lock, so the spare lane
 * took the queue in arrival order; an order on an account the stalled batch had locked waited on
 * it, holding the spare lane, and every order behind it waited too until the held row was let go.
 * PostgreSQL only: PGlite has one connection, and so one lane.
 */
const onPostgres = (process.env.DATABASE_URL ?? '').startsWith('postgres');
let t: TestApp;
let first: Client;
let second: Client;
beforeAll(async () => {
  if (!onPostgres) return;
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1, TRANSFER_BATCH_SPARE_LANES: 1, TRANSFER_BATCH_STALL_MS: 10 });
  first = clientFor(t, (await t.tenant('Stalled FX')).sandbox.secret_key);
  second = clientFor(t, (await t.tenant('FX beside')).sandbox.secret_key);
  for (const api of [first, second])
    expect((await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1500' })).status).toBe(200);
});
afterAll(async () => t?.close());

/** A new account of the business in `currency`, funded with `amount` when given; its id. */
async function open(api: Client, currency: string, amount?: string) {
  const id = (await api.post('/v1/accounts', { currency, label: currency })).body.data.id as string;
  if (amount) expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount })).status).toBe(200);
  return id;
}

/** A market sale of `amount` of `base` for the pair's other currency (NGN/USD at the simulated rate). */
const sell = (api: Client, base: 'NGN' | 'USD', amount: string, from: string, to: string) =>
  api.post('/v1/fx/orders', {
    order_type: 'market',
    side: 'sell',
    pair: { base, quote: base === 'NGN' ? 'USD' : 'NGN' },
    amount,
    source_id: from,
    destination_id: to,
  });
/** Sells 1,500.00 NGN for USD (1.00 at the simulated rate, less the spread): from an NGN account into a USD one. */
const sellNaira = (api: Client, from: string, to: string) => sell(api, 'NGN', '1500.00', from, to);

/** An amount of a currency with two decimals, in minor units. */
const cents = (amount: string) => BigInt(amount.replace('.', ''));

describe.skipIf(!onPostgres)('a stalled batch of FX orders and the orders behind it', () => {
  it('the spare lane leaves out an order on an account the stalled batch holds, and takes the one behind it', async () => {
    // Ids grow with time: the stalled batch locks `locked` (the lower id) before it waits on `held`.
    const locked = await open(first, 'USD', '10.00');
    const held = await open(first, 'NGN', '3000.00');
    const naira = await open(first, 'NGN');
    const [theirNaira, theirDollars] = [await open(second, 'NGN', '3000.00'), await open(second, 'USD')];
    // Each business's fx_position accounts exist from here on (a first order creates them).
    const warmUp = await sellNaira(first, held, locked);
    expect(warmUp.status).toBe(200);
    expect((await sellNaira(second, theirNaira, theirDollars)).status).toBe(200);

    const { stalled, behind } = await besideAStalledBatch(t.db, held, {
      stalled: () => sellNaira(first, held, locked),
      behind: () => sell(first, 'USD', '1.00', locked, naira),
      beside: () => sellNaira(second, theirNaira, theirDollars),
    });
    // Every order ran once: `locked` holds what the two sales converted into it, less the 1.00
    // sold from it, and `naira` what that sale converted.
    const converted = (res: typeof warmUp) => cents(res.body.data.converted_amount as string);
    const balance = async (id: string) => cents((await first.get(`/v1/accounts/${id}`)).body.data.balance as string);
    expect(await balance(locked)).toBe(1000n + converted(warmUp) + converted(stalled) - 100n);
    expect(await balance(naira)).toBe(converted(behind));
  });
});
