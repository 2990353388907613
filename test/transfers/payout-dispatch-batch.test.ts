import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { dispatchPendingPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { clientFor, countingStatements, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';
import { nubans, payoutBody, verifiedPayee } from '../payout-fixtures.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

/**
 * The dispatch job hands pending payouts to their rails together (transfers/payout-lifecycle.ts
 * dispatchPendingPayouts, docs/money-path.md): one insert per connector, then one transaction
 * that locks the transfers and moves them to `processing` with their events in one statement.
 * Before, each payout was about eight statements of its own, twenty payouts a pass.
 */
let t: TestApp;
let api: Client;
let customerId: string;
let tenantId: string;
// The app verifies payees at once; the job is handed a sandbox rail that settles a minute later.
const app = { SANDBOX_RAIL_DELAY_MS: 0 };
const cfg = { SANDBOX_RAIL_DELAY_MS: 60_000 };
const nuban = nubans(910000);

beforeAll(async () => {
  t = await startTestApp(app);
  const tenant = await t.tenant('Dispatch Co');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customerId);
});
afterAll(async () => t?.close());

async function funded(client: Client, customer: string, amount: string) {
  const a = (await client.post('/v1/accounts', { currency: 'NGN', label: 'payouts', customer_id: customer })).body.data;
  expect((await client.post(`/v1/simulations/accounts/${a.id}/fund`, { amount })).status).toBe(200);
  return a.id as string;
}

/** `count` pending payouts of 100.00 from `source` (created over HTTP, not yet dispatched). */
async function pendingPayouts(client: Client, customer: string, source: string, count: number): Promise<string[]> {
  const payee = await verifiedPayee(t, client, customer, nuban());
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await client.post('/v1/transfers', payoutBody(source, payee, '100.00', { description: 'supplier', customer_id: customer }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.transfer_status).toBe('pending');
    ids.push(res.body.data.id);
  }
  return ids;
}

const statusOf = async (id: string) => (await api.get(`/v1/transfers/${id}`)).body.data.transfer_status;
const eventsOf = async (ids: string[]) =>
  t.db
    .selectFrom('events')
    .select(['event_group_id', 'event_type', eventEnvelope().as('payload')])
    .where('event_group_id', 'in', ids)
    .where('event_type', '=', 'transfer.status.processing')
    .execute();
const railPayouts = async (ids: string[]) =>
  t.db.selectFrom('rail_payouts').selectAll().where('transfer_id', 'in', ids).orderBy('transfer_id').execute();

describe('the dispatch job hands pending payouts to their rails together', () => {
  it('costs the same statements for one payout as for fifty', async () => {
    const src = await funded(api, customerId, '10000.00');
    const one = await pendingPayouts(api, customerId, src, 1);
    const first = countingStatements(t.db);
    expect(await dispatchPendingPayouts(first.db, cfg)).toBe(false);
    const fifty = await pendingPayouts(api, customerId, src, 50);
    const many = countingStatements(t.db);
    expect(await dispatchPendingPayouts(many.db, cfg)).toBe(false);
    // The pending payouts read, the rail payouts inserted, the transfers locked, one statement
    // for the transfers moved and their events (BEGIN and COMMIT are not counted). Before, about
    // 6 per payout.
    expect(first.count()).toBe(4);
    expect(many.count()).toBe(first.count());

    for (const id of [...one, fifty[0]!, fifty[49]!]) expect(await statusOf(id)).toBe('processing');
    const rails = await railPayouts([...one, ...fifty]);
    expect(rails).toHaveLength(51);
    expect(rails.every((r) => r.state === 'submitted' && r.connector === 'sandbox' && r.amount === 10000n)).toBe(true);
    expect(rails.every((r) => r.settle_after !== null && r.settle_after.getTime() > Date.now() + 30_000)).toBe(true);
    // Each event carries the transfer as it now is, with the time its row was stamped.
    const events = await eventsOf([...one, ...fifty]);
    expect(events).toHaveLength(51);
    const row = await t.db.selectFrom('transfers').select(['updated_at']).where('id', '=', fifty[0]!).executeTakeFirstOrThrow();
    const data = (events.find((e) => e.event_group_id === fifty[0])!.payload as { event_data: Record<string, unknown> }).event_data;
    expect(data).toMatchObject({ id: fifty[0], transfer_status: 'processing', date_updated: row.updated_at.toISOString() });
    expect((await api.get(`/v1/transfers/${fifty[0]}`)).body.data).toEqual(data);
  });

  it('two workers dispatching at once hand each payout over once, with one event', async () => {
    const src = await funded(api, customerId, '10000.00');
    const ids = await pendingPayouts(api, customerId, src, 30);
    // Both read the same pending payouts; both submit them (the rail keeps one row per transfer);
    // the second to lock the transfers finds them processing and leaves them.
    await Promise.all([dispatchPendingPayouts(t.db, cfg), dispatchPendingPayouts(t.db, cfg)]);
    for (const id of [ids[0]!, ids[29]!]) expect(await statusOf(id)).toBe('processing');
    expect(await railPayouts(ids)).toHaveLength(30);
    const events = await eventsOf(ids);
    expect(events).toHaveLength(30);
    expect(new Set(events.map((e) => e.event_group_id)).size).toBe(30);
  });

  it('hands over payouts of both environments and several businesses in one pass, each to its own connector', async () => {
    const src = await funded(api, customerId, '1000.00');
    const [mine] = await pendingPayouts(api, customerId, src, 1);
    const other = await t.tenant('Other Dispatch Co');
    const otherApi = clientFor(t, other.sandbox.secret_key);
    const otherCustomer = (await otherApi.post('/v1/customers', johnDoe())).body.data.id;
    await approveKyc(otherApi, otherCustomer);
    const [theirs] = await pendingPayouts(otherApi, otherCustomer, await funded(otherApi, otherCustomer, '1000.00'), 1);
    // A live payout: the live environment pays through the manual connector (no settle time).
    const [live] = await pendingPayouts(api, customerId, src, 1);
    await t.db.updateTable('transfers').set({ environment: 'live' }).where('id', '=', live!).execute();

    expect(await dispatchPendingPayouts(t.db, cfg)).toBe(false);
    expect(await statusOf(mine!)).toBe('processing');
    expect((await otherApi.get(`/v1/transfers/${theirs}`)).body.data.transfer_status).toBe('processing');
    const rails = await railPayouts([mine!, theirs!, live!]);
    const byTransfer = new Map(rails.map((r) => [r.transfer_id, r]));
    expect(byTransfer.get(mine!)).toMatchObject({ tenant_id: tenantId, environment: 'sandbox', connector: 'sandbox' });
    expect(byTransfer.get(theirs!)).toMatchObject({ tenant_id: other.tenant_id, environment: 'sandbox', connector: 'sandbox' });
    expect(byTransfer.get(live!)).toMatchObject({ environment: 'live', connector: 'manual', settle_after: null });
    expect(await t.db.selectFrom('transfers').select('status').where('id', '=', live!).executeTakeFirstOrThrow()).toEqual({
      status: 'processing',
    });
  });

  it('leaves a payout waiting for approval', async () => {
    const src = await funded(api, customerId, '1000.00');
    const [a, b] = await pendingPayouts(api, customerId, src, 2);
    await t.db
      .updateTable('transfers')
      .set({ metadata: sql`jsonb_set(metadata, '{payout,approval}', '"waiting_approval"')` })
      .where('id', '=', b!)
      .execute();
    expect(await dispatchPendingPayouts(t.db, cfg)).toBe(false);
    expect(await statusOf(a!)).toBe('processing');
    expect(await statusOf(b!)).toBe('pending');
    expect(await railPayouts([b!])).toEqual([]);
    expect(await eventsOf([a!, b!])).toHaveLength(1);
  });

  it('a payout the rail refuses is left alone, and the others are still handed over', async () => {
    const src = await funded(api, customerId, '1000.00');
    const ids = await pendingPayouts(api, customerId, src, 3);
    // The middle payout's rail is lost behind its back: its rail payout cannot be recorded, which
    // fails the batch's submission; the payouts are then handed over one by one.
    const faulty = ids[1]!;
    await t.db.updateTable('transfers').set({ rail: null }).where('id', '=', faulty).execute();
    await expect(dispatchPendingPayouts(t.db, cfg)).rejects.toThrow(/rail/);
    expect(await statusOf(ids[0]!)).toBe('processing');
    expect(await statusOf(ids[2]!)).toBe('processing');
    expect(await statusOf(faulty)).toBe('pending');
    expect(await railPayouts([faulty])).toEqual([]);
  });
});
