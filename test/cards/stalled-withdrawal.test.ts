import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardholder, virtualCard } from '../card-helpers.js';
import { sandboxBusiness, startTestApp, type Client, type TestApp } from '../harness.js';
import { besideAStalledBatch } from '../row-locks.js';

/**
 * Card withdrawals share batches as transfers do, and so a batch's spare lane (db/batcher.ts):
 * beside a stalled batch it must leave out a withdrawal on a row that batch holds, and take the
 * ones behind it. The fault: withdrawals told the batcher nothing of what they lock, so the spare
 * lane took the queue in arrival order; a withdrawal from a card the stalled batch had locked
 * waited on it, holding the spare lane, and every withdrawal behind it waited too until the held
 * row was let go. PostgreSQL only: PGlite has one connection, and so one lane.
 */
const onPostgres = (process.env.DATABASE_URL ?? '').startsWith('postgres');
let t: TestApp;
let api: Client;
beforeAll(async () => {
  if (!onPostgres) return;
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1, TRANSFER_BATCH_SPARE_LANES: 1, TRANSFER_BATCH_STALL_MS: 10 });
  api = (await sandboxBusiness(t, 'Stalled withdrawals')).api;
});
afterAll(async () => t?.close());

/** A customer with a USD account holding 1,000.00 and a virtual card funded with 100.00 from it. */
async function cardWithAccount() {
  const customer = await cardholder(api, { physical: true });
  const account = (await api.post('/v1/accounts', { currency: 'USD', label: 'Main', customer_id: customer })).body.data.id as string;
  expect((await api.post(`/v1/simulations/accounts/${account}/fund`, { amount: '1000.00' })).status).toBe(200);
  const card = await virtualCard(api, customer);
  const funded = await api.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: account },
    destination: { destination_type: 'card', id: card },
    amount: '100.00',
  });
  expect(funded.status, funded.text).toBe(200);
  return { customer, account, card };
}

const withdraw = (card: string, account: string) => api.post('/v1/cards/withdraw', { card_id: card, amount: '1.00', account_id: account });
const balanceOf = async (path: string) => (await api.get(path)).body.data.balance as string;

describe.skipIf(!onPostgres)('a stalled batch of card withdrawals and the withdrawals behind it', () => {
  it('the spare lane leaves out a withdrawal from a card the stalled batch holds, and takes the one behind it', async () => {
    const mine = await cardWithAccount();
    const other = await cardWithAccount();
    // Ids grow with time: the stalled batch locks the card's balance row (the lower id) before it waits on `held`'s.
    const held = (await api.post('/v1/accounts', { currency: 'USD', label: 'Held', customer_id: mine.customer })).body.data.id as string;

    await besideAStalledBatch(t.db, held, {
      stalled: () => withdraw(mine.card, held),
      behind: () => withdraw(mine.card, mine.account),
      beside: () => withdraw(other.card, other.account),
    });
    expect(await balanceOf(`/v1/cards/${mine.card}/balance`)).toBe('98.00');
    expect(await balanceOf(`/v1/accounts/${held}`)).toBe('1.00');
    expect(await balanceOf(`/v1/accounts/${mine.account}`)).toBe('901.00');
    expect(await balanceOf(`/v1/accounts/${other.account}`)).toBe('901.00');
  });
});
