import { sql, type ColumnType, type Insertable } from 'kysely';
import type { WebhookDeliveriesTable } from './repo.js';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageQuery } from '../../db/pagination.js';
import { eventData, eventEnvelope, eventRow, type EventPayload } from './outbox.js';
import { scoped } from '../../db/scoped.js';

/** A replay of an endpoint's events over a time range (migration 1170). */
export interface WebhookReplaysTable {
  id: string;
  tenant_id: string;
  environment: string;
  endpoint_id: string;
  scope: 'failed' | 'all';
  range_from: Date;
  range_to: Date;
  queued: number;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    webhook_replays: WebhookReplaysTable;
  }
}

/** The type of test events: sent to one endpoint on request, never raised by the API itself. */
export const TEST_EVENT_TYPE = 'webhook.test';

/**
 * Read side of the outbox for the dashboard's events pages, and the one write the dashboard
 * needs: a test event for a single endpoint. Kept apart from the delivery worker's queue-repo.
 */

export interface EventSummaryRow {
  id: string;
  event_type: string;
  event_group_id: string;
  created_at: Date;
}

function events(db: Queryable, ctx: Scope) {
  return scoped(db, 'events', ctx);
}

export async function listEvents(
  db: Queryable,
  ctx: Scope,
  query: PageQuery & { event_type?: string; group_id?: string },
): Promise<Page<EventSummaryRow>> {
  let base = events(db, ctx);
  if (query.event_type) base = base.where('event_type', '=', query.event_type);
  if (query.group_id) base = base.where('event_group_id', '=', query.group_id);
  return paginate<EventSummaryRow>(db, base, 'events.id', query, (qb) => qb.select(['id', 'event_type', 'event_group_id', 'created_at']));
}

export async function findEvent(db: Queryable, ctx: Scope, id: string): Promise<(EventSummaryRow & { payload: EventPayload }) | undefined> {
  return events(db, ctx)
    .select(['id', 'event_type', 'event_group_id', 'created_at', eventEnvelope().as('payload')])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Events of these resources (group ids), oldest first: a resource's timeline. */
export async function eventsOfGroups(
  db: Queryable,
  ctx: Scope,
  groupIds: string[],
  order: 'asc' | 'desc' = 'asc',
  limit = 100,
): Promise<EventSummaryRow[]> {
  if (groupIds.length === 0) return [];
  return events(db, ctx)
    .select(['id', 'event_type', 'event_group_id', 'created_at'])
    .where('event_group_id', 'in', groupIds)
    .orderBy('id', order)
    .limit(limit)
    .execute();
}

/**
 * A test event for one endpoint: the event is stored and taken off the fan-out queue at once
 * (so no other endpoint receives it) with a single delivery due now, which the delivery worker
 * sends like any other.
 */
export async function insertTestEvent(
  trx: Queryable,
  ctx: Scope,
  ids: { eventId: string; deliveryId: string; endpointId: string },
  payload: EventPayload,
): Promise<void> {
  await trx.insertInto('events').values(eventRow(payload)).execute();
  await trx.deleteFrom('event_fanout_queue').where('event_id', '=', ids.eventId).execute();
  await trx
    .insertInto('webhook_deliveries')
    .values({
      id: ids.deliveryId,
      tenant_id: ctx.tenantId,
      environment: ctx.environment,
      event_id: ids.eventId,
      endpoint_id: ids.endpointId,
      event_type: payload.event_type,
      transaction_id: null,
      status: 'pending',
      next_attempt_at: sql<Date>`now()` as unknown as Date,
      manual: true,
    })
    .execute();
}

// ---- the events API: catching up without webhooks, and replays --------------------------------

export interface EventWithSequenceRow {
  id: string;
  payload: EventPayload;
  sequence: string | null;
}

/** Events of types the API raises (test events are an endpoint's own business), with their sequence numbers. */
function apiEvents(db: Queryable, ctx: Scope) {
  return events(db, ctx).leftJoin('event_sequences as s', 's.event_id', 'events.id').where('events.event_type', '<>', TEST_EVENT_TYPE);
}

export async function listEventPayloads(
  db: Queryable,
  ctx: Scope,
  query: PageQuery & { event_type?: string; resource_id?: string; order: 'asc' | 'desc' },
): Promise<Page<EventWithSequenceRow>> {
  let base = apiEvents(db, ctx);
  if (query.event_type) base = base.where('events.event_type', '=', query.event_type);
  if (query.resource_id) base = base.where('events.event_group_id', '=', query.resource_id);
  return paginate<EventWithSequenceRow>(
    db,
    base,
    'events.id',
    query,
    (qb) => qb.select(['events.id', eventEnvelope().as('payload'), sql<string | null>`s.sequence::text`.as('sequence')]),
    query.order,
  );
}

export async function findEventPayload(db: Queryable, ctx: Scope, id: string): Promise<EventWithSequenceRow | undefined> {
  return apiEvents(db, ctx)
    .select(['events.id', eventEnvelope().as('payload'), sql<string | null>`s.sequence::text`.as('sequence')])
    .where('events.id', '=', id)
    .executeTakeFirst();
}

/** Ids of the events of an id range (UUIDv7: a time range) of these types (null: all), oldest first, at most `limit`. */
export async function eventIdsInRange(
  db: Queryable,
  ctx: Scope,
  range: { fromId: string; toIdExclusive: string; types: string[] | null },
  limit: number,
): Promise<{ id: string; event_type: string; transaction_id: string | null }[]> {
  let q = apiEvents(db, ctx)
    .select(['events.id', 'events.event_type', sql<string | null>`${eventData()}->>'transaction_id'`.as('transaction_id')])
    .where('events.id', '>=', range.fromId)
    .where('events.id', '<', range.toIdExclusive);
  if (range.types) q = q.where('events.event_type', 'in', range.types);
  return q.orderBy('events.id').limit(limit).execute();
}

/** An endpoint's deliveries of events in an id range (those that `failed` only, or all), at most `limit`. */
export async function deliveriesInRange(
  db: Queryable,
  ctx: Scope,
  endpointId: string,
  range: { fromId: string; toIdExclusive: string },
  only: 'failed' | null,
  limit: number,
): Promise<{ id: string; event_id: string; status: string }[]> {
  let q = scoped(db, 'webhook_deliveries', ctx)
    .select(['id', 'event_id', 'status'])
    .where('endpoint_id', '=', endpointId)
    .where('event_id', '>=', range.fromId)
    .where('event_id', '<', range.toIdExclusive);
  if (only) q = q.where('status', '=', only);
  return q.orderBy('event_id').limit(limit).execute();
}

/**
 * Queues one more attempt of these finished deliveries (sent or failed; one still waiting or in
 * flight is left alone, so a replay never sends an event twice at once). Replayed deliveries go
 * in the retry lane: new events' first attempts never wait behind a replay. Returns how many.
 */
export async function requeueFinished(trx: Queryable, ctx: Scope, endpointId: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const rows = await scoped(trx, 'webhook_deliveries', ctx)
    .select('id')
    .where('endpoint_id', '=', endpointId)
    .where('id', 'in', ids)
    .where('status', 'in', ['sent', 'failed'])
    .forUpdate()
    .execute();
  if (rows.length === 0) return 0;
  await sql`
    update webhook_deliveries set status = 'retrying', manual = true, next_attempt_at = now(), updated_at = now()
    where id = any(${rows.map((r) => r.id)}::uuid[]) and status in ('sent', 'failed')`.execute(trx);
  return rows.length;
}

export async function insertReplayDeliveries(trx: Queryable, rows: Insertable<WebhookDeliveriesTable>[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await trx
    .insertInto('webhook_deliveries')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  return inserted.length;
}

export async function insertReplay(trx: Queryable, row: Insertable<WebhookReplaysTable>): Promise<Date> {
  const r = await trx.insertInto('webhook_replays').values(row).returning('created_at').executeTakeFirstOrThrow();
  return r.created_at;
}
