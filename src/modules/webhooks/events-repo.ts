import { sql } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageQuery } from '../../db/pagination.js';
import type { EventPayload } from './outbox.js';
import { scoped } from '../../db/scoped.js';

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
  return events(db, ctx).select(['id', 'event_type', 'event_group_id', 'created_at', 'payload']).where('id', '=', id).executeTakeFirst();
}

/** Events of these resources (group ids), oldest first: a resource's timeline. */
export async function eventsOfGroups(db: Queryable, ctx: Scope, groupIds: string[], limit = 100): Promise<EventSummaryRow[]> {
  if (groupIds.length === 0) return [];
  return events(db, ctx)
    .select(['id', 'event_type', 'event_group_id', 'created_at'])
    .where('event_group_id', 'in', groupIds)
    .orderBy('id')
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
  await sql`
    insert into events (id, tenant_id, environment, event_type, event_category, event_group_id, payload)
    values (${ids.eventId}, ${ctx.tenantId}, ${ctx.environment}, ${payload.event_type}, ${payload.event_category},
      ${payload.event_group_id}, ${JSON.stringify(payload)}::jsonb)`.execute(trx);
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
