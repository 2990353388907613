import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ledger/index.js';
import { chargeCards, planChargeReads, type ChargeRequest } from '../../src/modules/collections/cards.js';
import { planSimulationLocks, simulateCollections, type SimulationRequest } from '../../src/modules/collections/lifecycle.js';
import { collectionBusiness } from './collection-helpers.js';
import { startTestApp, type Client, type TestApp, countStatements, batchSizes, deadlocksDuring } from '../harness.js';

/**
 * Collection settlement on the batch path (docs/money-path.md): many collections end in one
 * transaction with a fixed number of statements (their settlements in one posting batch, every
 * write in one statement), each checked on its own in arrival order. Card charges and the sandbox
 * simulations are gathered over HTTP like transfers.
 */
let t: TestApp;
beforeAll(async () => {
  // One lane: while it is busy new requests queue, so concurrent ones form batches.
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1 });
});
afterAll(async () => t?.close());

async function business(name: string) {
  const made = await collectionBusiness(t, name);
  const d = { config: t.config, sealer: t.sealer, baseUrl: 'http://localhost' };
  const simulation = (id: string, action: SimulationRequest['action'], reason: string | null = null): SimulationRequest => ({
    ctx: made.ctx,
    d,
    id,
    action,
    reason,
  });
  return { ...made, simulation, d };
}

const balance = async (api: Client, id: string) => (await api.get(`/v1/accounts/${id}`)).body.data.balance as string;

describe('collections in batches', () => {
  it('costs the same statements to settle one collection as fifty', async () => {
    const b = await business('Settle Statements Ltd');
    const dest = await b.account();
    const ids = [];
    for (let i = 0; i < 52; i++) ids.push(await b.collection(dest, '1.00'));
    const statements = async (reqs: SimulationRequest[]) => {
      const { count, result: outcomes } = await countStatements(t.db, (trx) => simulateCollections(trx, reqs));
      expect(outcomes.every((o) => o.ok)).toBe(true);
      return count;
    };
    // The first settlement creates the business's fee and settlement accounts, as a lone one does.
    await statements([b.simulation(ids[0]!, 'complete')]);
    const one = await statements([b.simulation(ids[1]!, 'complete')]);
    const fifty = await statements(ids.slice(2).map((id) => b.simulation(id, 'complete')));
    // The collections (lock), the destination accounts (share), the business's settings, its fee
    // account, the settlement account, balance rows (their locks, then the rows), and one statement
    // for every write: balances, ledger rows, account transactions, the collections' new status,
    // their events.
    expect(one).toBe(8);
    expect(fifty).toBe(one);
    // 52 × 1.00, less the default 1.5 % fee of each (0.015, rounded up to 0.02).
    expect(await balance(b.api, dest)).toBe('50.96');
    expect((await ledger.reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });

  it("one collection's refusal (unknown, already ended, also by an earlier item) never fails its neighbours", async () => {
    const b = await business('Settle Neighbours Ltd');
    const dest = await b.account();
    const [a, c, e] = [await b.collection(dest), await b.collection(dest), await b.collection(dest)];
    const unknown = '0190e7a0-0000-7000-8000-000000000000';
    const outcomes = await t.db
      .transaction()
      .execute((trx) =>
        simulateCollections(trx, [
          b.simulation(a, 'complete'),
          b.simulation(unknown, 'complete'),
          b.simulation(c, 'fail', 'Wrong PIN'),
          b.simulation(a, 'complete'),
          b.simulation(e, 'expire'),
          b.simulation(c, 'complete'),
        ]),
      );
    expect(outcomes.map((o) => (o.ok ? o.data.status : o.error.code))).toEqual([
      'completed',
      'not_found',
      'failed',
      'invalid_state_transition',
      'expired',
      'invalid_state_transition',
    ]);
    expect(outcomes[3]!.ok ? '' : outcomes[3]!.error.message).toBe('A completed collection cannot be completed');
    expect(outcomes[5]!.ok ? '' : outcomes[5]!.error.message).toBe('A failed collection cannot be completed');
    // 10.00 less the 1.5 % fee.
    expect(await balance(b.api, dest)).toBe('9.85');
    // Each ended collection reads back as it was answered, with its event committed beside it.
    for (const o of outcomes) {
      if (!o.ok) continue;
      expect((await b.api.get(`/v1/collections/${o.data.id}`)).body.data).toEqual(o.data);
      const events = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', o.data.id).orderBy('id').execute();
      expect(events.map((x) => x.event_type)).toEqual(['collection.status.pending', `collection.status.${o.data.status}`]);
    }
    expect((await ledger.reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });

  it("a batch of simulations spanning two businesses locks each business's collections after the claim, and ends both", async () => {
    const [one, two] = [await business('Simulate Mix One Ltd'), await business('Simulate Mix Two Ltd')];
    const destinations = [await one.account(), await two.account()];
    const reqs = [
      one.simulation(await one.collection(destinations[0]!), 'complete'),
      two.simulation(await two.collection(destinations[1]!), 'complete'),
    ];
    const outcomes = await t.db.transaction().execute((trx) => {
      // The planned lock is one business's statement: a mixed batch locks its own, business by business.
      expect(planSimulationLocks(trx, reqs)).toBeUndefined();
      expect(planSimulationLocks(trx, reqs.slice(0, 1))?.statements).toHaveLength(1);
      return simulateCollections(trx, reqs);
    });
    expect(outcomes.map((o) => (o.ok ? o.data.status : o.error.code))).toEqual(['completed', 'completed']);
    expect(await balance(one.api, destinations[0]!)).toBe('9.85');
    expect(await balance(two.api, destinations[1]!)).toBe('9.85');
  });

  it('concurrent card charges over HTTP share batches; each is answered alone and replays byte for byte', async () => {
    const b = await business('Charge Batch Ltd');
    const dest = await b.account();
    const good = await b.cardToken('4242424242424242');
    const declined = await b.cardToken('4000000000009995');
    const intents: string[] = [];
    for (let i = 0; i < 20; i++) intents.push(await b.paymentIntent(dest));
    const bodies = intents.map((id, i) => ({ payment_intent_id: id, card_token: i % 5 === 4 ? declined : good }));
    // The first intent charged twice in the same burst: one charge wins, the other finds it charged.
    bodies.push({ payment_intent_id: intents[0]!, card_token: good });
    const keys = bodies.map((_, i) => `charge-${i}-${b.tenant.tenant_id}`);
    const before = await batchSizes('collections');
    const results = await Promise.all(
      bodies.map((body, i) => b.api.post('/v1/collections/cards/payment-intents/charge', body, { idempotencyKey: keys[i]! })),
    );
    const after = await batchSizes('collections');
    expect(after.sum - before.sum).toBe(21);
    expect(after.count - before.count).toBeLessThan(21);
    results.slice(0, 20).forEach((r, i) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.data.status).toBe(i % 5 === 4 ? 'failed' : 'succeeded');
    });
    expect(results[20]!.status).toBe(409);
    expect(results[20]!.body.error.code).toBe('invalid_state_transition');
    // 16 charges of 2.00 settle, less 0.03 each (1.5 %).
    expect(await balance(b.api, dest)).toBe('31.52');
    const replay = await b.api.post('/v1/collections/cards/payment-intents/charge', bodies[1], { idempotencyKey: keys[1]! });
    expect(replay.text).toBe(results[1]!.text);
    expect((await ledger.reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  });

  it("a batch of charges spanning two businesses reads each business's intents and cards after the claim, and charges both", async () => {
    const charge = async (name: string): Promise<ChargeRequest & { dest: string; api: Client }> => {
      const b = await business(name);
      const dest = await b.account();
      const body = { payment_intent_id: await b.paymentIntent(dest), card_token: await b.cardToken('4242424242424242') };
      return { ctx: b.ctx, d: b.d, body, dest, api: b.api };
    };
    const reqs = [await charge('Charge Mix One Ltd'), await charge('Charge Mix Two Ltd')];
    const outcomes = await t.db.transaction().execute((trx) => {
      // Planned reads are one business's statements: a mixed batch reads its own, business by business.
      expect(planChargeReads(trx, reqs)).toBeUndefined();
      expect(planChargeReads(trx, reqs.slice(0, 1))?.statements).toHaveLength(2);
      return chargeCards(trx, reqs);
    });
    expect(outcomes.map((o) => (o.ok ? o.data.status : o.error.code))).toEqual(['succeeded', 'succeeded']);
    for (const r of reqs) expect(await balance(r.api, r.dest)).toBe('1.97');
  });
});

describe('an inbound transfer and a simulation ending the same bank-transfer collection', () => {
  it('take their locks in one order and never deadlock', async () => {
    const b = await business('Inbound Race Ltd');
    const dest = (await b.api.post('/v1/accounts', { currency: 'NGN', label: 'in', customer_id: b.customer })).body.data.id as string;
    const found = await deadlocksDuring(t, async () => {
      for (let round = 0; round < 6; round++) {
        const c = (
          await b.api.post('/v1/collections', {
            amount: '50.00',
            currency: 'NGN',
            country: 'NG',
            customer_id: b.customer,
            source: { source_type: 'external', methods: ['bank_transfer'] },
            destination: { destination_type: 'internal_account', id: dest },
          })
        ).body.data;
        // The payer's transfer arrives while the sandbox completes the same collection: one of them
        // ends it, the other finds it ended (a plain funding, or 409).
        const [funded, completed] = await Promise.all([
          b.api.post(`/v1/simulations/accounts/${dest}/fund`, { amount: '50.00', reference: c.bank_transfer.reference }),
          b.api.post(`/v1/simulations/collections/${c.id}/complete`),
        ]);
        expect(funded.status, funded.text).toBe(200);
        expect([200, 409], completed.text).toContain(completed.status);
      }
    });
    expect(found).toBe(0);
    expect((await ledger.reconcile(t.db, b.tenant.tenant_id)).ok).toBe(true);
  }, 60_000);
});
