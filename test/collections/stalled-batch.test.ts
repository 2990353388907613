import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { johnDoe, sandboxBusiness, startTestApp, type Client, type TestApp } from '../harness.js';
import { besideAStalledBatch } from '../row-locks.js';

/**
 * Collection simulations share batches as transfers do, and so a batch's spare lane
 * (db/batcher.ts): beside a stalled batch it must leave out a collection of that batch's business,
 * whose completion moves the same settlement account, and take other businesses' behind it. The
 * fault: collections told the batcher nothing of what they lock, so the spare lane took the queue
 * in arrival order; a completion of the stalled business waited on its settlement account's
 * balance row, holding the spare lane, and every completion behind it waited too until the held
 * row was let go. PostgreSQL only: PGlite has one connection, and so one lane.
 */
const onPostgres = (process.env.DATABASE_URL ?? '').startsWith('postgres');
let t: TestApp;
beforeAll(async () => {
  if (!onPostgres) return;
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1, TRANSFER_BATCH_SPARE_LANES: 1, TRANSFER_BATCH_STALL_MS: 10 });
});
afterAll(async () => t?.close());

/** A business with a customer: its client, a new USD account of the customer, and a card collection of 10.00 into an account. */
async function business(name: string) {
  const { api } = await sandboxBusiness(t, name);
  const customer = (await api.post('/v1/customers', johnDoe())).body.data.id as string;
  const account = async () =>
    (await api.post('/v1/accounts', { currency: 'USD', label: 'in', customer_id: customer })).body.data.id as string;
  const collection = async (destination: string) => {
    const res = await api.post('/v1/collections', {
      amount: '10.00',
      currency: 'USD',
      country: 'NG',
      customer_id: customer,
      source: { source_type: 'external', methods: ['card'] },
      destination: { destination_type: 'internal_account', id: destination },
    });
    expect(res.status, res.text).toBe(200);
    return res.body.data.id as string;
  };
  return { api, account, collection };
}

const complete = (api: Client, id: string) => api.post(`/v1/simulations/collections/${id}/complete`);
/** An amount with two decimals, in minor units. */
const cents = (amount: string) => BigInt(amount.replace('.', ''));
const balance = async (api: Client, id: string) => (await api.get(`/v1/accounts/${id}`)).body.data.balance as string;

describe.skipIf(!onPostgres)('a stalled batch of collection completions and the completions behind it', () => {
  it("the spare lane leaves out a completion of the stalled batch's business, and takes another business's behind it", async () => {
    const a = await business('Stalled collections');
    const b = await business('Collections beside');
    const open = await a.account();
    // A first completion creates each business's settlement account.
    expect((await complete(a.api, await a.collection(open))).status).toBe(200);
    const theirs = await b.account();
    expect((await complete(b.api, await b.collection(theirs))).status).toBe(200);
    // Ids grow with time: the stalled batch locks the settlement account's balance row (the lower id) before it waits on `held`'s.
    const held = await a.account();
    const [stalledOne, sameBusiness, otherBusiness] = [await a.collection(held), await a.collection(open), await b.collection(theirs)];

    await besideAStalledBatch(t.db, held, {
      stalled: () => complete(a.api, stalledOne),
      behind: () => complete(a.api, sameBusiness),
      beside: () => complete(b.api, otherBusiness),
    });
    // Each completion ran once: 10.00 less its fee into `held`, two into `open` as into `theirs`.
    const fee = (await a.api.get(`/v1/collections/${stalledOne}`)).body.data.fee as string;
    expect(cents(await balance(a.api, held))).toBe(1000n - cents(fee));
    expect(await balance(a.api, open)).toBe(await balance(b.api, theirs));
  });
});
