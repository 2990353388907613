import { sql, type ColumnType, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page } from '../../db/pagination.js';
import { eventEnvelope, type EventPayload } from './outbox.js';
import type { AttemptsQuery, DeliveryStatus, HistoryQuery, ListEndpointsQuery } from './schema.js';
import { locked, scoped, scopedUpdate, transition, type Lock } from '../../db/scoped.js';

type Json<T> = ColumnType<T, string, string>;
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

export interface WebhookEndpointsTable {
  id: string;
  tenant_id: string;
  environment: string;
  url: string;
  event_types: ColumnType<string[] | null, string | null, string | null>;
  status: 'enabled' | 'disabled';
  disabled_reason: string | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: Timestamp;
  deleted_at: ColumnType<Date | null, never, Date | null>;
  /** Delivery circuit (0720): failed attempts in a row, and until when no delivery is claimed. */
  consecutive_failures: ColumnType<number, never, number>;
  circuit_open_until: ColumnType<Date | null, never, Date | null>;
}

export interface WebhookDeliveriesTable {
  id: string;
  tenant_id: string;
  environment: string;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  transaction_id: string | null;
  status: DeliveryStatus;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date | null, Date | string | null, Date | string | null>;
  lease_token: string | null;
  manual: ColumnType<boolean, boolean | undefined, boolean>;
  last_attempt_at: ColumnType<Date | null, never, Date | null>;
  last_status_code: ColumnType<number | null, never, number | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: Timestamp;
}

export interface WebhookAttemptsTable {
  id: string;
  tenant_id: string;
  environment: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  attempt: number;
  trigger: 'scheduled' | 'manual';
  url: string;
  request_headers: Json<Record<string, string>>;
  status_code: number | null;
  duration_ms: number;
  response_headers: ColumnType<Record<string, string> | null, string | null, never>;
  response_excerpt: string | null;
  error: string | null;
  /** When the attempt was due and when its request started (0720); null on older rows. */
  scheduled_at: ColumnType<Date | null, Date | null | undefined, never>;
  started_at: ColumnType<Date | null, Date | null | undefined, never>;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    webhook_endpoints: WebhookEndpointsTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
  }
}

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type AttemptRow = Selectable<WebhookAttemptsTable>;
/** A delivery with its endpoint's URL, as lists and details show it. */
export type DeliveryView = DeliveryRow & { url: string };

// ---- endpoints -------------------------------------------------------------------------------

function endpoints(db: Queryable, ctx: Scope) {
  return scoped(db, 'webhook_endpoints', ctx).where('deleted_at', 'is', null);
}

export async function insertEndpoint(db: Queryable, row: Insertable<WebhookEndpointsTable>) {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

export async function findEndpoint(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return locked(endpoints(db, ctx).selectAll().where('id', '=', id), lock).executeTakeFirst();
}

export async function countEndpoints(db: Queryable, ctx: Scope): Promise<number> {
  const row = await endpoints(db, ctx)
    .select(sql<string>`count(*)`.as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function listEndpoints(db: Queryable, ctx: Scope, query: ListEndpointsQuery): Promise<Page<EndpointRow>> {
  let base = endpoints(db, ctx);
  if (query.status) base = base.where('status', '=', query.status);
  return paginate<EndpointRow>(db, base, 'webhook_endpoints.id', query, (qb) => qb.selectAll());
}

export interface EndpointPatch {
  url?: string;
  event_types?: string | null;
  status?: 'enabled' | 'disabled';
  disabled_reason?: string | null;
  secret_sealed?: string;
  previous_secret_sealed?: string | null;
  previous_secret_expires_at?: Date | null;
  deleted_at?: Date;
}

export async function updateEndpoint(db: Queryable, ctx: Scope, id: string, patch: EndpointPatch) {
  return scopedUpdate(db, 'webhook_endpoints', ctx)
    .set({ ...patch, updated_at: sql<Date>`now()` as unknown as Date })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Worker side: disables an endpoint (410 or a failed last attempt) unless already disabled. */
export async function disableEndpoint(db: Queryable, id: string, reason: string) {
  await db
    .updateTable('webhook_endpoints')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'enabled')
    .execute();
}

/** Deliveries that can never go out once their endpoint is deleted end as failed. */
export async function failOpenDeliveries(db: Queryable, ctx: Scope, endpointId: string) {
  await scopedUpdate(db, 'webhook_deliveries', ctx)
    .set({ status: 'failed', next_attempt_at: null, lease_token: null, updated_at: new Date() })
    .where('endpoint_id', '=', endpointId)
    .where('status', 'in', ['pending', 'retrying', 'processing'])
    .execute();
}

// ---- deliveries and attempts (read side) -----------------------------------------------------

function deliveries(db: Queryable, ctx: Scope) {
  return scoped(db, 'webhook_deliveries', ctx).innerJoin('webhook_endpoints as e', 'e.id', 'webhook_deliveries.endpoint_id');
}

export async function listDeliveries(db: Queryable, ctx: Scope, query: HistoryQuery): Promise<Page<DeliveryView>> {
  let base = deliveries(db, ctx);
  if (query.event_type) base = base.where('webhook_deliveries.event_type', '=', query.event_type);
  if (query.status) base = base.where('webhook_deliveries.status', '=', query.status);
  if (query.transaction_id) base = base.where('webhook_deliveries.transaction_id', '=', query.transaction_id);
  if (query.event_id) base = base.where('webhook_deliveries.event_id', '=', query.event_id);
  if (query.endpoint_id) base = base.where('webhook_deliveries.endpoint_id', '=', query.endpoint_id);
  return paginate<DeliveryView>(db, base, 'webhook_deliveries.id', query, (qb) => qb.selectAll('webhook_deliveries').select('e.url'));
}

export async function findDelivery(db: Queryable, ctx: Scope, id: string): Promise<DeliveryView | undefined> {
  return deliveries(db, ctx).selectAll('webhook_deliveries').select('e.url').where('webhook_deliveries.id', '=', id).executeTakeFirst();
}

export async function findEventPayload(db: Queryable, ctx: Scope, eventId: string): Promise<EventPayload | undefined> {
  const row = await scoped(db, 'events', ctx).select(eventEnvelope().as('payload')).where('id', '=', eventId).executeTakeFirst();
  return row?.payload;
}

export async function lastAttempt(db: Queryable, ctx: Scope, deliveryId: string) {
  return scoped(db, 'webhook_attempts', ctx)
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export async function listAttempts(
  db: Queryable,
  ctx: Scope,
  by: { deliveryId?: string; endpointId?: string },
  query: AttemptsQuery,
): Promise<Page<AttemptRow>> {
  let base = scoped(db, 'webhook_attempts', ctx);
  if (by.deliveryId) base = base.where('delivery_id', '=', by.deliveryId);
  if (by.endpointId) base = base.where('endpoint_id', '=', by.endpointId);
  return paginate<AttemptRow>(db, base, 'webhook_attempts.id', query, (qb) => qb.selectAll());
}

/**
 * Manual resend, due now. A finished (sent or failed) delivery gets one manual attempt; an open
 * one (pending or retrying) is only moved up and keeps its schedule. Null if the state changed.
 */
export async function requeueDelivery(db: Queryable, ctx: Scope, id: string, finished: boolean) {
  const now = sql<Date>`now()` as unknown as Date;
  return transition(
    db,
    'webhook_deliveries',
    ctx,
    id,
    finished ? ['sent', 'failed'] : ['pending', 'retrying'],
    finished ? { status: 'pending', manual: true, next_attempt_at: now, updated_at: now } : { next_attempt_at: now, updated_at: now },
  );
}

/**
 * A test clock moved its environment's time on by `ms`: the retries it waits for come that much
 * closer (next_attempt_at earlier), so the delivery worker sends those now due at once. Deliveries
 * in flight (processing, under a lease) and first attempts are left alone.
 */
export async function bringRetriesForward(db: Queryable, scope: Scope, ms: number): Promise<void> {
  if (ms <= 0) return;
  await scopedUpdate(db, 'webhook_deliveries', scope)
    .set({ next_attempt_at: sql<Date>`next_attempt_at - make_interval(secs => ${ms / 1000})` as unknown as Date })
    .where('status', '=', 'retrying')
    .where('manual', '=', false)
    .execute();
}
