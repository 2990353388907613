import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type Client, type TestApp } from '../harness.js';
import { collectionBusiness } from './collection-helpers.js';
import { besideAStalledBatch } from '../row-locks.js';

/**
 * Collection simulations and card charges share batches as transfers do, and so a batch's spare
 * lane (db/batcher.ts): beside a stalled batch it must leave out a collection of that batch's business,
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

/** A business with a customer (collection-helpers.ts), and the body of a card charge of 10.00 into an account. */
async function business(name: string) {
  const made = await collectionBusiness(t, name);
  const cardCharge = async (destination: string) => ({
    payment_intent_id: await made.paymentIntent(destination, '10.00'),
    card_token: await made.cardToken('4242424242424242'),
  });
  return { ...made, cardCharge };
}

/** An amount with two decimals, in minor units. */
const cents = (amount: string) => BigInt(amount.replace('.', ''));
const balance = async (api: Client, id: string) => (await api.get(`/v1/accounts/${id}`)).body.data.balance as string;

type Business = Awaited<ReturnType<typeof business>>;
/** The two ways money arrives through a gathered collection route: what to prepare into an account, and how to send it. */
const ways = [
  {
    way: 'completion',
    prepare: (biz: Business, destination: string): Promise<unknown> => biz.collection(destination),
    send: (api: Client, id: unknown) => api.post(`/v1/simulations/collections/${id as string}/complete`),
  },
  {
    way: 'card charge',
    prepare: (biz: Business, destination: string): Promise<unknown> => biz.cardCharge(destination),
    send: (api: Client, body: unknown) => api.post('/v1/collections/cards/payment-intents/charge', body),
  },
];

describe.skipIf(!onPostgres)('a stalled batch of collections and the collections behind it', () => {
  it.each(ways)(
    "the spare lane leaves out a $way of the stalled batch's business, and takes another business's behind it",
    async ({ way, prepare, send }) => {
      const a = await business(`Stalled ${way}`);
      const b = await business(`Beside ${way}`);
      const open = await a.account();
      // A first one creates each business's settlement account.
      expect((await send(a.api, await prepare(a, open))).status).toBe(200);
      const theirs = await b.account();
      expect((await send(b.api, await prepare(b, theirs))).status).toBe(200);
      // Ids grow with time: the stalled batch locks the settlement account's balance row (the lower id) before it waits on `held`'s.
      const held = await a.account();
      const [stalledOne, sameBusiness, otherBusiness] = [await prepare(a, held), await prepare(a, open), await prepare(b, theirs)];

      await besideAStalledBatch(t.db, held, {
        stalled: () => send(a.api, stalledOne),
        behind: () => send(a.api, sameBusiness),
        beside: () => send(b.api, otherBusiness),
      });
      // Each ran once: `open` and `theirs` took two of 10.00 less its fee, `held` one.
      expect(await balance(a.api, open)).toBe(await balance(b.api, theirs));
      expect(2n * cents(await balance(a.api, held))).toBe(cents(await balance(a.api, open)));
    },
  );
});
