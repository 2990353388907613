import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stampedAt } from '../../src/core/clock.js';
import { newId } from '../../src/lib/ids.js';
import { runWebhookTick, type DeliveryOptions } from '../../src/modules/webhooks/delivery.js';
import { eventEnvelope, recordEvent, type EventPayload } from '../../src/modules/webhooks/outbox.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { startReceiver, until, type Receiver } from '../webhooks/receiver.js';

/**
 * Events are stored without their webhook envelope (migration 1230): the row keeps event_data and
 * the timestamp, and every reader rebuilds the envelope from the row's columns. An event reads
 * exactly as it did when its row held the whole envelope (as rows written before the migration
 * still do): the same JSON, key for key, in the API's answers, the signed webhook body and the
 * dashboard's pages.
 */
let t: TestApp;
let agent: Agent;
let api: Client;
let rx: Receiver;
let scope: { tenantId: string; environment: 'sandbox' };

const FAST: Partial<DeliveryOptions> = { retryDelaysMs: [], jitter: 0, timeoutMs: 5000, allowLoopback: true };
const deliverAll = async () => {
  while (await runWebhookTick({ db: t.db, sealer: t.sealer }, FAST));
};

beforeAll(async () => {
  t = await startTestApp();
  rx = await startReceiver();
  agent = new Agent(t);
  await agent.signup(`stored+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  api = clientFor(t, agent.textOf('new-secret-sandbox')!);
  expect((await api.post('/v1/webhooks/endpoints', { url: rx.url })).status).toBe(201);
  const account = (await api.post('/v1/accounts', { currency: 'NGN', label: 'Main' })).body.data.id as string;
  const row = await t.db.selectFrom('accounts').select('tenant_id').where('id', '=', account).executeTakeFirstOrThrow();
  scope = { tenantId: row.tenant_id, environment: 'sandbox' };
});
afterAll(async () => {
  await rx.close();
  await t.close();
});

/** Event data with what changes a JSON text: nesting, key lengths, numbers, unicode, nulls, escapes. */
const DATA = {
  id: newId(),
  transaction_id: newId(),
  amount: '1500.00',
  n: 12000,
  ratio: 0.125,
  b: true,
  nothing: null,
  name: 'Zoë "Q" Ọlá\n',
  list: [3, { zz: 1, a: 'x' }, 'é'],
  nested: { longer_key: 1, k: { y: 2, x: [] } },
};

/** Every answer that carries the event: API, delivery detail, dashboard pages (the payload blocks). */
async function readers(eventId: string, deliveryId: string) {
  const pre = (html: string) => /<pre class="payload"[^>]*>([\s\S]*?)<\/pre>/.exec(html)![1]!;
  return {
    one: (await api.get(`/v1/events/${eventId}`)).text,
    list: (await api.get(`/v1/events?resource_id=${DATA.id}`)).text,
    delivery: (await api.get(`/v1/webhooks/event/${deliveryId}`)).text,
    dashboardEvent: pre((await agent.get(`/dashboard/events/${eventId}`)).body),
    dashboardDelivery: pre((await agent.get(`/dashboard/webhooks/deliveries/${deliveryId}`)).body),
  };
}

describe('an event stored without its envelope', () => {
  it('keeps only what its columns do not say, and reads, sends and resends byte for byte as the stored envelope did', async () => {
    // A test clock's instant: the timestamp is the application's, not the row's created_at.
    const at = new Date('2031-05-06T07:08:09.123Z');
    const written: EventPayload = await stampedAt(at, () => recordEvent(t.db, scope, 'collection.status.completed', DATA));
    expect(written.timestamp).toBe(at.toISOString());
    const id = written.event_id;

    // The row: event_data and the timestamp; no envelope, so its ids appear in their columns only.
    const { rows } = await sql<{ payload: unknown; event_data: unknown; occurred_at: Date; text: string }>`
      select payload, event_data, occurred_at, to_jsonb(e)::text as text from events e where id = ${id}`.execute(t.db);
    expect(rows[0]).toMatchObject({ payload: null, event_data: DATA, occurred_at: at });
    expect(rows[0]!.text.split(id)).toHaveLength(2);
    expect(rows[0]!.text.split(scope.tenantId)).toHaveLength(2);

    // What the outbox wrote before: JSON.stringify of the whole envelope into payload (jsonb).
    const stored = sql`${JSON.stringify(written)}::jsonb`;
    const same = await t.db
      .selectFrom('events')
      .select([
        eventEnvelope().as('rebuilt'),
        sql<string>`${eventEnvelope()}::text`.as('rebuiltText'),
        sql<string>`${stored}::text`.as('storedText'),
      ])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(same.rebuiltText).toBe(same.storedText);
    expect(Object.keys(same.rebuilt)).toEqual(Object.keys(JSON.parse(same.storedText)));

    await deliverAll();
    const sent = rx.received.filter((r) => r.headers['webhook-id'] === id);
    expect(sent).toHaveLength(1);
    const delivery = await t.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'transaction_id'])
      .where('event_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(delivery.transaction_id).toBe(DATA.transaction_id);
    const newForm = await readers(id, delivery.id);
    expect(JSON.parse(newForm.one).data).toMatchObject({ ...written, sequence: expect.any(Number) });

    // The same event as a row written before migration 1230 holds it: every reader answers the
    // same bytes, and a resend signs the same body.
    await sql`update events set payload = ${stored}, event_data = null, occurred_at = null where id = ${id}`.execute(t.db);
    expect(await readers(id, delivery.id)).toEqual(newForm);
    expect((await api.post(`/v1/webhooks/event/send/${delivery.id}`)).status).toBe(200);
    await until(
      () => rx.received.filter((r) => r.headers['webhook-id'] === id).length === 2,
      () => deliverAll(),
    );
    const [first, again] = rx.received.filter((r) => r.headers['webhook-id'] === id);
    expect(again!.body).toBe(first!.body);
    expect(first!.body).toBe(JSON.stringify({ ...JSON.parse(same.storedText), sequence: JSON.parse(newForm.one).data.sequence }));
  });

  it('is how a transfer stores its event', async () => {
    const [a, b] = await Promise.all(
      ['A', 'B'].map(async (label) => (await api.post('/v1/accounts', { currency: 'NGN', label })).body.data.id as string),
    );
    await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '10.00' });
    const transfer = await api.post('/v1/transfers', {
      source: { id: a },
      destination: { destination_type: 'internal_account', id: b },
      amount: '1.00',
    });
    expect(transfer.status).toBe(200);
    const row = await t.db
      .selectFrom('events')
      .select(['id', 'event_data', sql<unknown>`payload`.as('payload'), eventEnvelope().as('envelope')])
      .where('event_group_id', '=', transfer.body.data.id)
      .executeTakeFirstOrThrow();
    expect(row.payload).toBeNull();
    expect(row.event_data).toEqual(row.envelope.event_data);
    expect((await api.get(`/v1/events/${row.id}`)).body.data).toMatchObject({
      event_id: row.id,
      event_data: { id: transfer.body.data.id },
    });
  });
});
