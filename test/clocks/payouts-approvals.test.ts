import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setSettings } from '../../src/modules/tenants/service.js';
import { startWorkers } from '../../src/workers/index.js';
import { cardholder } from '../card-helpers.js';
import { eventsOf, openAccount } from '../fx-helpers.js';
import { sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
import { nubans, payoutBody, verifiedPayee } from '../payout-fixtures.js';
import { until } from '../webhooks/receiver.js';
import { CLOCKS, DAY, whenReady } from './clock-helpers.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

/** Sandbox payout settlement and approval expiry follow the clock of the business they belong to. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
});
afterAll(() => t.close());

const stampOf = async (groupId: string, type: string) => {
  const row = await t.db
    .selectFrom('events')
    .select(eventEnvelope().as('payload'))
    .where('event_group_id', '=', groupId)
    .where('event_type', '=', type)
    .executeTakeFirstOrThrow();
  return new Date(row.payload.timestamp).getTime();
};

describe('a test clock', () => {
  it('settles a sandbox payout and expires an undecided approval when it passes their times', async () => {
    const { tenant, api } = await sandboxBusiness(t, 'Rails Clock Co');
    await setSettings(t.db, tenant.tenant_id, { approvals: { sandbox: { fx_orders: true } } });
    const start = new Date();
    const clock = (await api.post(CLOCKS, { frozen_time: start.toISOString() })).body.data;
    await api.post(`${CLOCKS}/${clock.id}/attach`);
    const customer = await cardholder(api);
    const ngn = await openAccount(api, 'NGN', customer, '1000.00');
    const usd = await openAccount(api, 'USD', customer, '100.00');
    const payee = await verifiedPayee(t, api, customer, nubans(712000)());
    const payout = await api.post('/v1/transfers', payoutBody(ngn, payee, '100.00'));
    expect(payout.status, payout.text).toBe(200);
    const order = await api.post('/v1/fx/orders', {
      customer_id: customer,
      order_type: 'market',
      side: 'sell',
      pair: { base: 'USD', quote: 'NGN' },
      amount: '10.00',
      source_id: usd,
      destination_id: ngn,
    });
    expect(order.body.data?.status, order.text).toBe('waiting_approval');
    const approval = await t.db.selectFrom('approvals').selectAll().where('subject_id', '=', order.body.data.id).executeTakeFirstOrThrow();

    const workers = startWorkers({ config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log });
    try {
      const transfer = async () => (await api.get(`/v1/transfers/${payout.body.data.id}`)).body.data.transfer_status;
      // Dispatched in real time; its settlement (due at once) waits for the clock.
      await until(
        async () => (await transfer()) === 'processing',
        async () => undefined,
      );
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: new Date(start.getTime() + 2 * DAY).toISOString() });
      await whenReady(api, clock.id);
      expect(await transfer()).toBe('completed');
    } finally {
      await workers.stop();
    }
    expect((await api.get(`/v1/fx/orders/${order.body.data.id}`)).body.data).toMatchObject({
      status: 'expired',
      rejection_reason: 'approval_expired',
    });
    expect(await eventsOf(t, order.body.data.id)).toEqual(['fx.order.expired']);
    expect(await stampOf(order.body.data.id, 'fx.order.expired')).toBe(approval.expires_at.getTime());
    const settled = await stampOf(payout.body.data.id, 'transfer.status.completed');
    expect(settled).toBeGreaterThanOrEqual(start.getTime());
    expect(settled).toBeLessThan(start.getTime() + DAY);
  });
});
