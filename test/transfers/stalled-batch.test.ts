import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cardholder, virtualCard } from '../card-helpers.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { gtbPayee, nubans, payoutBody } from '../payout-fixtures.js';
import { approveKyc } from '../kyc-helpers.js';
import { setSettings } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, sandboxBusiness, startTestApp, type Client, type TestApp } from '../harness.js';
import { answeredWithin, besideAStalledBatch, holdBalanceRow, waitersAtLeast } from '../row-locks.js';

/**
 * One stalled batch must not hold every transfer behind it (docs/money-path.md, "Gathering").
 * The fault: with one batch lane, a batch whose commit waited on the disk, or whose statements
 * waited on a row another transaction held, kept the lane, and every transfer that arrived
 * meanwhile waited for it to end, whatever accounts it touched. Here a transaction of the test
 * holds one account's balance row: the transfer from it waits, and a transfer between two other
 * accounts goes through beside it in a spare lane. PostgreSQL only: PGlite has one connection,
 * and so one lane.
 */
const onPostgres = (process.env.DATABASE_URL ?? '').startsWith('postgres');
let t: TestApp;
let api: Client;
beforeAll(async () => {
  if (!onPostgres) return;
  t = await startTestApp({ TRANSFER_BATCH_LANES: 1, TRANSFER_BATCH_SPARE_LANES: 1, TRANSFER_BATCH_STALL_MS: 10, SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Stalled batch');
  api = clientFor(t, tenant.sandbox.secret_key);
});
afterAll(async () => t?.close());

/** 1.00 from one account to another, by the test's business (or `by`). */
const transfer = (from: string, to: string, by: Client = api) =>
  by.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: from },
    destination: { destination_type: 'internal_account', id: to },
    amount: '1.00',
  });

/** Funds a card from an account of its holder. */
const fundCard = (from: string, card: string) =>
  api.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: from },
    destination: { destination_type: 'card', id: card },
    amount: '1.00',
  });

/** A new NGN account of the test's business (or `by`); its id. */
const open = async (label: string, by: Client = api) => (await by.post('/v1/accounts', { currency: 'NGN', label })).body.data.id as string;

describe.skipIf(!onPostgres)('a stalled batch and the transfers behind it', () => {
  it('a transfer between other accounts goes through while a batch waits on a row', async () => {
    const [held, a, b, c] = [await open('held'), await open('a'), await open('b'), await open('c')];
    for (const id of [held, b]) expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount: '10.00' })).status).toBe(200);

    const release = await holdBalanceRow(t.db, held);

    try {
      const stalled = transfer(held, a);
      let stalledDone = false;
      void stalled.then(() => (stalledDone = true));
      await waitersAtLeast(t.db, 1);
      const beside = transfer(b, c);
      // Without the spare lane, the second transfer waited behind the first until the row was
      // let go: it would still be waiting when this race ends.
      await answeredWithin(beside, 10_000);
      expect(stalledDone).toBe(false);
      await release();
      expect((await stalled).status).toBe(200);
    } finally {
      await release();
    }
    expect((await api.get(`/v1/accounts/${held}`)).body.data.balance).toBe('9.00');
    expect((await api.get(`/v1/accounts/${c}`)).body.data.balance).toBe('1.00');
  });

  // The fault: the spare lane took the queue in arrival order. A transfer on an account the
  // stalled batch had locked waited there, holding the spare lane, and a transfer between other
  // accounts queued behind it until the held row was let go.
  it('the spare lane leaves out a transfer on an account the stalled batch holds, and takes the one behind it', async () => {
    // Ids grow with time: the stalled batch locks `locked` (the lower id) before it waits on `held`.
    const [locked, held, b, c, d] = [await open('locked'), await open('held'), await open('b'), await open('c'), await open('d')];
    for (const id of [held, b]) expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount: '10.00' })).status).toBe(200);

    await besideAStalledBatch(t.db, held, {
      stalled: () => transfer(held, locked),
      behind: () => transfer(locked, c),
      beside: () => transfer(b, d),
    });
    // In arrival order on `locked`, which starts empty: 1.00 in from `held`, then 1.00 out to c.
    expect((await api.get(`/v1/accounts/${locked}`)).body.data.balance).toBe('0.00');
    expect((await api.get(`/v1/accounts/${c}`)).body.data.balance).toBe('1.00');
    expect((await api.get(`/v1/accounts/${d}`)).body.data.balance).toBe('1.00');
  });
  // The fault: a card funding named only its source account, so the spare lane took a funding of
  // a card whose balance row the stalled batch had locked, waited there, and held every
  // transfer behind it.
  it('the spare lane leaves out a funding of a card the stalled batch holds, and takes the one behind it', async () => {
    const customer = await cardholder(api, { physical: true });
    const usd = async (label: string) =>
      (await api.post('/v1/accounts', { currency: 'USD', label, customer_id: customer })).body.data.id as string;
    const own = await usd('own');
    expect((await api.post(`/v1/simulations/accounts/${own}/fund`, { amount: '10.00' })).status).toBe(200);
    const card = await virtualCard(api, customer);
    // Ids grow with time: the stalled batch locks the card's balance row (the lower id) before it waits on `held`'s.
    const held = await usd('held');
    expect((await api.post(`/v1/simulations/accounts/${held}/fund`, { amount: '10.00' })).status).toBe(200);
    const [b, c] = [await open('b'), await open('c')];
    expect((await api.post(`/v1/simulations/accounts/${b}/fund`, { amount: '10.00' })).status).toBe(200);

    await besideAStalledBatch(t.db, held, {
      stalled: () => fundCard(held, card),
      behind: () => fundCard(own, card),
      beside: () => transfer(b, c),
    });
    expect((await api.get(`/v1/cards/${card}/balance`)).body.data.balance).toBe('2.00');
    expect((await api.get(`/v1/accounts/${own}`)).body.data.balance).toBe('9.00');
    expect((await api.get(`/v1/accounts/${c}`)).body.data.balance).toBe('1.00');
  });
  // The fault: a transfer that pays a fee named only its accounts, so the spare lane took a
  // fee-paying transfer of the stalled batch's business, which waited on the business's fee
  // account (every fee of the business in that currency goes there), and held every transfer
  // behind it.
  it("the spare lane leaves out a fee-paying transfer of the stalled batch's business, and takes the transfer behind it", async () => {
    const charging = await sandboxBusiness(t, 'Charges fees');
    await setSettings(t.db, charging.tenant.tenant_id, { fees: { internal_transfer: { NGN: { flat: '0.10' } } } });
    const own = (label: string) => open(label, charging.api);
    const pay = (from: string, to: string) => transfer(from, to, charging.api);
    // The business's oldest NGN account takes its fees. Ids grow with time: the stalled batch
    // locks its balance row (the lower id) before it waits on `held`'s.
    const fees = await own('fees');
    const [held, a, c, d] = [await own('held'), await own('a'), await own('c'), await own('d')];
    for (const id of [held, c])
      expect((await charging.api.post(`/v1/simulations/accounts/${id}/fund`, { amount: '10.00' })).status).toBe(200);
    const [b, e] = [await open('b'), await open('e')];
    expect((await api.post(`/v1/simulations/accounts/${b}/fund`, { amount: '10.00' })).status).toBe(200);

    await besideAStalledBatch(t.db, held, { stalled: () => pay(held, a), behind: () => pay(c, d), beside: () => transfer(b, e) });
    const balance = async (id: string) => (await charging.api.get(`/v1/accounts/${id}`)).body.data.balance as string;
    expect([await balance(fees), await balance(held), await balance(c), await balance(d)]).toEqual(['0.20', '8.90', '8.90', '1.00']);
    expect((await api.get(`/v1/accounts/${e}`)).body.data.balance).toBe('1.00');
  });
  // The fault: a payout named only its source account, so the spare lane took a payout of the
  // stalled batch's business, which waited on the settlement account's balance row that every
  // payout of the business in that currency credits, and held every transfer behind it.
  it("the spare lane leaves out a payout of the stalled batch's business, and takes the transfer behind it", async () => {
    const customer = (await api.post('/v1/customers', johnDoe())).body.data.id as string;
    await approveKyc(api, customer);
    const registered = await api.post('/v1/external-accounts', gtbPayee(customer, nubans(700000)()));
    expect(registered.status, registered.text).toBe(202);
    await verifyDuePayees(t.db, t.unitOfWork, { SANDBOX_RAIL_DELAY_MS: 0 });
    const payee = registered.body.data.id as string;
    const ngn = async (label: string) => {
      const id = (await api.post('/v1/accounts', { currency: 'NGN', label, customer_id: customer })).body.data.id as string;
      expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount: '1000.00' })).status).toBe(200);
      return id;
    };
    const pay = (from: string) => api.post('/v1/transfers', payoutBody(from, payee, '100.00', { customer_id: customer }));
    const other = await ngn('other');
    // A first payout creates the business's NGN settlement account.
    const first = await pay(other);
    expect(first.status, first.text).toBe(200);
    // Ids grow with time: the stalled batch locks the settlement account's balance row (the lower id) before it waits on `held`'s.
    const held = await ngn('held');
    const [b, c] = [await open('b'), await open('c')];
    expect((await api.post(`/v1/simulations/accounts/${b}/fund`, { amount: '10.00' })).status).toBe(200);

    await besideAStalledBatch(t.db, held, { stalled: () => pay(held), behind: () => pay(other), beside: () => transfer(b, c) });
    // Each payout held its 100.00 and its fee once: `other` twice, `held` once, from 1,000.00 each.
    const available = async (id: string) =>
      BigInt(((await api.get(`/v1/accounts/${id}`)).body.data.available_balance as string).replace('.', ''));
    expect(2n * (await available(held)) - (await available(other))).toBe(100000n);
    expect((await api.get(`/v1/accounts/${c}`)).body.data.balance).toBe('1.00');
  });
});
