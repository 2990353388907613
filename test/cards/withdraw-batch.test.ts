import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WriteSet } from '../../src/db/write-set.js';
import { reconcile } from '../../src/ledger/index.js';
import { withdrawCards, type WithdrawRequest } from '../../src/modules/cards/withdrawals.js';
import { cardholder, virtualCard } from '../card-helpers.js';
import { batchSizes, countStatements, sandboxBusiness, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * Card withdrawals on the batch path (docs/money-path.md): a batch reads its cards, share-locks
 * its accounts, locks every balance row and writes everything in one statement, whatever its
 * size; each withdrawal is decided on its own, in arrival order, against the locked balances.
 */
let t: TestApp;
beforeAll(async () => {
  // One lane: while it is busy new requests queue, so concurrent ones form batches.
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1 });
});
afterAll(async () => t?.close());

async function business(name: string) {
  const { tenant, api, ctx } = await sandboxBusiness(t, name);
  /** A customer with a USD account holding 1,000.00 and a virtual card funded with `onCard` from it. */
  const cardWith = async (onCard: string) => {
    const customer = await cardholder(api, { physical: true });
    const account = (await api.post('/v1/accounts', { currency: 'USD', label: 'Main', customer_id: customer })).body.data.id as string;
    await api.post(`/v1/simulations/accounts/${account}/fund`, { amount: '1000.00' });
    const card = await virtualCard(api, customer);
    const funded = await api.post('/v1/transfer', {
      source: { source_type: 'internal_account', id: account },
      destination: { destination_type: 'card', id: card },
      amount: onCard,
      client_reference: `fund-${card}`,
    });
    expect(funded.status, funded.text).toBe(200);
    return { customer, account, card };
  };
  return { tenant, api, ctx, cardWith };
}

const cardBalance = async (api: Client, card: string) => (await api.get(`/v1/cards/${card}/balance`)).body.data.balance as string;
const accountBalance = async (api: Client, id: string) => (await api.get(`/v1/accounts/${id}`)).body.data.balance as string;

/** withdrawCards in a transaction of its own, its writes sent before the commit, as the batch path does. */
const inBatch = (reqs: WithdrawRequest[]) =>
  countStatements(t.db, async (trx) => {
    const writes = new WriteSet(trx);
    const outcomes = await withdrawCards(trx, reqs, writes);
    await writes.flush();
    return outcomes;
  });

describe('card withdrawals in batches', () => {
  it('costs the same statements for one withdrawal as for twenty', async () => {
    const b = await business('Withdraw Statements Ltd');
    const holders = [await b.cardWith('100.00')];
    for (let i = 1; i < 4; i++) holders.push(await b.cardWith('100.00'));
    const request = (i: number): WithdrawRequest => {
      const h = holders[i % holders.length]!;
      return { ctx: b.ctx, body: { card_id: h.card, amount: '1.00', account_id: h.account } };
    };
    const one = await inBatch([request(0)]);
    const twenty = await inBatch(Array.from({ length: 20 }, (_, i) => request(i)));
    expect([...one.result, ...twenty.result].every((o) => o.ok)).toBe(true);
    // The cards, the accounts (share), the balance rows (locks, then rows), and one statement for every write:
    // balances, ledger rows, account transactions, events.
    expect(one.count).toBe(5);
    expect(twenty.count).toBe(one.count);
    // 100.00 less 1 + 5 withdrawals of 1.00 (the first card), and 5 each for the others.
    expect(await cardBalance(b.api, holders[0]!.card)).toBe('94.00');
    expect(await cardBalance(b.api, holders[1]!.card)).toBe('95.00');
    expect(await accountBalance(b.api, holders[0]!.account)).toBe('906.00');
    expect((await reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });

  it("one withdrawal's refusal never fails its neighbours; each is decided in arrival order", async () => {
    const b = await business('Withdraw Neighbours Ltd');
    const h = await b.cardWith('50.00');
    const other = await b.cardWith('10.00');
    const withdraw = (body: Partial<WithdrawRequest['body']>): WithdrawRequest => ({
      ctx: b.ctx,
      body: { card_id: h.card, amount: '10.00', account_id: h.account, ...body },
    });
    const { result: outcomes } = await inBatch([
      withdraw({}),
      withdraw({ card_id: '0190e7a0-0000-7000-8000-000000000000' }),
      withdraw({ amount: '35.00' }),
      withdraw({ account_id: other.account }),
      withdraw({ amount: '40.00' }),
      withdraw({ amount: '5.00', account_id: undefined }),
      withdraw({ amount: '0.001' }),
      { ctx: b.ctx, body: { card_id: other.card, amount: '10.00' } },
    ]);
    expect(outcomes.map((o) => (o.ok ? o.data.amount : o.error.code))).toEqual([
      '10.00',
      'not_found',
      '35.00',
      'validation_failed',
      // 50 - 10 - 35 = 5 left: refused, and the 5.00 after it still goes through.
      'insufficient_funds',
      '5.00',
      'invalid_amount',
      '10.00',
    ]);
    expect(outcomes[5]!.ok && outcomes[5]!.data.account_id).toBe(h.account);
    expect(await cardBalance(b.api, h.card)).toBe('0.00');
    expect(await cardBalance(b.api, other.card)).toBe('0.00');
    expect(await accountBalance(b.api, h.account)).toBe('1000.00');
    // Each accepted withdrawal reads back with its account transaction, and its event committed beside it.
    for (const o of outcomes) {
      if (!o.ok) continue;
      const tx = (await b.api.get(`/v1/transactions/${o.data.transaction_id}`)).body.data;
      expect(tx).toMatchObject({ transaction_type: 'card_withdrawal', direction: 'out', amount: o.data.amount });
    }
    const events = await t.db
      .selectFrom('events')
      .select('event_type')
      .where('event_group_id', '=', h.card)
      .where('event_type', '=', 'cards.transaction.withdraw')
      .execute();
    expect(events).toHaveLength(3);
    expect((await reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });

  it('concurrent withdrawals over HTTP share batches; each is answered alone and replays byte for byte', async () => {
    const b = await business('Withdraw Batch Ltd');
    const h = await b.cardWith('20.00');
    // 25 withdrawals of 1.00 from a card holding 20.00: 20 succeed, 5 find it empty.
    const keys = Array.from({ length: 25 }, (_, i) => `withdraw-${i}-${b.tenant.tenant_id}`);
    const body = { card_id: h.card, amount: '1.00', account_id: h.account };
    const before = await batchSizes('card_withdrawals');
    const results = await Promise.all(keys.map((key) => b.api.post('/v1/cards/withdraw', body, { idempotencyKey: key })));
    const after = await batchSizes('card_withdrawals');
    expect(after.sum - before.sum).toBe(25);
    expect(after.count - before.count).toBeLessThan(25);
    expect(results.filter((r) => r.status === 200)).toHaveLength(20);
    for (const r of results.filter((x) => x.status !== 200)) {
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe('insufficient_funds');
    }
    expect(await cardBalance(b.api, h.card)).toBe('0.00');
    expect(await accountBalance(b.api, h.account)).toBe('1000.00');
    // A replay is the stored answer, byte for byte, success or refusal, and moves nothing.
    for (const i of [0, results.findIndex((r) => r.status === 422)]) {
      const replay = await b.api.post('/v1/cards/withdraw', body, { idempotencyKey: keys[i]! });
      expect(replay.status).toBe(results[i]!.status);
      expect(replay.text).toBe(results[i]!.text);
    }
    expect(await cardBalance(b.api, h.card)).toBe('0.00');
    expect((await reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });
});
