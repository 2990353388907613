import type { Lock } from '../../db/scoped.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import { endpointDisabled, eventInDelivery } from './errors.js';
import type { Page, PageQuery } from '../../db/pagination.js';
import type { Sealer } from '../../lib/crypto.js';
import { newId, uuidv7LowerBound } from '../../lib/ids.js';
/** The outbox every module writes its events to, in the transaction of the change they report. */
export { EVENT_TYPES, recordEvent, recordEvents, type EventType } from './outbox.js';
import * as eventsRepo from './events-repo.js';
import type { EventPayload } from './outbox.js';
import * as repo from './repo.js';
import {
  DEFAULT_OVERLAP_SECONDS,
  type AttemptResponse,
  type AttemptsQuery,
  type CreateEndpointBody,
  type DeliveryDetail,
  type DeliverySummary,
  type EndpointResponse,
  type EndpointWithSecretResponse,
  type EventResponse,
  type ListEventsQuery,
  MAX_REPLAY_DAYS,
  MAX_REPLAY_EVENTS,
  type ReplayBody,
  type ReplayResponse,
  type HistoryQuery,
  type ListEndpointsQuery,
  type ResendResponse,
  type RotateSecretBody,
  type UpdateEndpointBody,
} from './schema.js';
import { generateSecret } from './signing.js';
import { assertEndpointUrl, type UrlRules } from './url-safety.js';

/**
 * The webhooks service: endpoint management, delivery history and manual resend. The API routes
 * and the dashboard both call these; every function takes the pool or an open transaction and
 * the caller's context, and every query is scoped by tenant and environment.
 */

/** Endpoints per business and environment. */
export const MAX_ENDPOINTS = 20;
/** Scheduled retries after the first attempt (docs/api-rules.md#webhooks), for `max_retries`. */
export const RETRY_COUNT = 9;

export const sealContext = (endpointId: string) => `webhook-endpoint:${endpointId}`;

function normalizeTypes(types: string[] | null | undefined): string | null {
  return types && types.length > 0 ? JSON.stringify([...new Set(types)]) : null;
}

export function toEndpointResponse(row: repo.EndpointRow): EndpointResponse {
  const overlap = row.previous_secret_expires_at && row.previous_secret_expires_at > new Date();
  return {
    id: row.id,
    url: row.url,
    event_types: row.event_types ?? [],
    status: row.status,
    disabled_reason: row.disabled_reason,
    previous_secret_expires_at: overlap ? row.previous_secret_expires_at!.toISOString() : null,
    circuit: row.circuit_open_until === null ? 'closed' : row.circuit_open_until > new Date() ? 'open' : 'probing',
    circuit_open_until: row.circuit_open_until?.toISOString() ?? null,
    consecutive_failures: row.consecutive_failures,
    date_created: row.created_at.toISOString(),
    date_updated: row.updated_at.toISOString(),
  };
}

async function requireEndpoint(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  const row = await repo.findEndpoint(db, ctx, id, lock);
  if (!row) throw notFound('Webhook endpoint');
  return row;
}

/** Registers an endpoint; the answer is the only time (with rotation) the secret is shown. */
export async function createEndpoint(
  db: Queryable,
  ctx: Scope,
  sealer: Sealer,
  input: CreateEndpointBody,
  rules: UrlRules,
): Promise<EndpointWithSecretResponse> {
  const url = assertEndpointUrl(input.url, ctx.environment, rules).toString();
  if ((await repo.countEndpoints(db, ctx)) >= MAX_ENDPOINTS) {
    throw new AppError('limit_exceeded', `At most ${MAX_ENDPOINTS} webhook endpoints per environment`);
  }
  const id = newId();
  const secret = generateSecret();
  await repo.insertEndpoint(db, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    url,
    event_types: normalizeTypes(input.event_types),
    status: 'enabled',
    disabled_reason: null,
    secret_sealed: sealer.seal(secret, sealContext(id)),
    previous_secret_sealed: null,
  });
  return { ...toEndpointResponse(await requireEndpoint(db, ctx, id)), secret };
}

export async function listEndpoints(db: Queryable, ctx: Scope, query: ListEndpointsQuery): Promise<Page<EndpointResponse>> {
  const page = await repo.listEndpoints(db, ctx, query);
  return { ...page, items: page.items.map(toEndpointResponse) };
}

export async function getEndpoint(db: Queryable, ctx: Scope, id: string): Promise<EndpointResponse> {
  return toEndpointResponse(await requireEndpoint(db, ctx, id));
}

/** Changes URL, event types and enabled/disabled; re-enabling resumes its open deliveries. */
export async function updateEndpoint(
  db: Queryable,
  ctx: Scope,
  id: string,
  patch: UpdateEndpointBody,
  rules: UrlRules,
): Promise<EndpointResponse> {
  const changes: repo.EndpointPatch = {};
  if (patch.url !== undefined) changes.url = assertEndpointUrl(patch.url, ctx.environment, rules).toString();
  if (patch.event_types !== undefined) changes.event_types = normalizeTypes(patch.event_types);
  if (patch.status !== undefined) {
    changes.status = patch.status;
    changes.disabled_reason = patch.status === 'disabled' ? 'disabled_by_user' : null;
  }
  const row = await repo.updateEndpoint(db, ctx, id, changes);
  if (!row) throw notFound('Webhook endpoint');
  return toEndpointResponse(row);
}

/**
 * A new secret signs from now on; the current one keeps signing beside it for
 * `expire_old_in_seconds` (default 24 h, 0 = at once), so receivers can switch without a gap.
 */
export async function rotateSecret(
  trx: Trx,
  ctx: Scope,
  sealer: Sealer,
  id: string,
  input: RotateSecretBody,
): Promise<EndpointWithSecretResponse> {
  const current = await requireEndpoint(trx, ctx, id, 'update');
  const overlap = input.expire_old_in_seconds ?? DEFAULT_OVERLAP_SECONDS;
  const secret = generateSecret();
  const row = await repo.updateEndpoint(trx, ctx, id, {
    secret_sealed: sealer.seal(secret, sealContext(id)),
    previous_secret_sealed: overlap > 0 ? current.secret_sealed : null,
    previous_secret_expires_at: overlap > 0 ? new Date(Date.now() + overlap * 1000) : null,
  });
  return { ...toEndpointResponse(row!), secret };
}

/** Deletes an endpoint: nothing more is sent to it; its history stays readable. */
export async function deleteEndpoint(trx: Trx, ctx: Scope, id: string): Promise<{ id: string; deleted: boolean }> {
  const row = await repo.updateEndpoint(trx, ctx, id, { deleted_at: new Date() });
  if (!row) throw notFound('Webhook endpoint');
  await repo.failOpenDeliveries(trx, ctx, id);
  return { id, deleted: true };
}

// ---- history ---------------------------------------------------------------------------------

function toSummary(d: repo.DeliveryView): DeliverySummary {
  const open = d.status === 'pending' || d.status === 'retrying';
  return {
    id: d.id,
    event_id: d.event_id,
    endpoint_id: d.endpoint_id,
    transaction_id: d.transaction_id,
    event_type: d.event_type,
    path: d.url,
    http_method: 'POST',
    status: d.status,
    response_status_code: d.last_status_code,
    attempts: d.attempts,
    created_at: d.created_at.toISOString(),
    last_attempt: d.last_attempt_at?.toISOString() ?? null,
    next_attempt: open ? (d.next_attempt_at?.toISOString() ?? null) : null,
  };
}

/** A response excerpt as an object: the JSON object it holds, else `{text}`. */
function bodyObject(excerpt: string | null): Record<string, unknown> | null {
  if (!excerpt) return null;
  try {
    const parsed: unknown = JSON.parse(excerpt);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON (or cut at the excerpt limit): shown as text
  }
  return { text: excerpt };
}

/** Webhook history: one row per event and endpoint, newest first. */
export async function listDeliveries(db: Queryable, ctx: Scope, query: HistoryQuery): Promise<Page<DeliverySummary>> {
  const page = await repo.listDeliveries(db, ctx, query);
  return { ...page, items: page.items.map(toSummary) };
}

export async function getDelivery(db: Queryable, ctx: Scope, id: string): Promise<DeliveryDetail> {
  const d = await repo.findDelivery(db, ctx, id);
  if (!d) throw notFound('Webhook event');
  const [payload, last] = await Promise.all([repo.findEventPayload(db, ctx, d.event_id), repo.lastAttempt(db, ctx, id)]);
  return {
    ...toSummary(d),
    request_headers: last?.request_headers ?? null,
    payload: (payload ?? {}) as unknown as Record<string, unknown>,
    response_headers: last?.response_headers ?? null,
    response_body: bodyObject(last?.response_excerpt ?? null),
    error: last?.error ?? null,
    max_retries: RETRY_COUNT,
    updated_at: d.updated_at.toISOString(),
  };
}

function toAttempt(a: repo.AttemptRow): AttemptResponse {
  return {
    id: a.id,
    delivery_id: a.delivery_id,
    event_id: a.event_id,
    endpoint_id: a.endpoint_id,
    attempt: a.attempt,
    trigger: a.trigger,
    target_url: a.url,
    http_method: 'POST',
    request_headers: a.request_headers,
    status_code: a.status_code,
    duration_ms: a.duration_ms,
    response_headers: a.response_headers,
    response_body: bodyObject(a.response_excerpt),
    error: a.error,
    created_at: a.created_at.toISOString(),
  };
}

/** Every attempt of one delivery (webhook event), newest first. */
export async function listAttempts(db: Queryable, ctx: Scope, deliveryId: string, query: AttemptsQuery): Promise<Page<AttemptResponse>> {
  if (!(await repo.findDelivery(db, ctx, deliveryId))) throw notFound('Webhook event');
  const page = await repo.listAttempts(db, ctx, { deliveryId }, query);
  return { ...page, items: page.items.map(toAttempt) };
}

/** Every attempt made to one endpoint (deleted endpoints included: it is history), newest first. */
export async function listEndpointAttempts(
  db: Queryable,
  ctx: Scope,
  endpointId: string,
  query: AttemptsQuery,
): Promise<Page<AttemptResponse>> {
  if (!(await repo.findEndpoint(db, ctx, endpointId))) throw notFound('Webhook endpoint');
  const page = await repo.listAttempts(db, ctx, { endpointId }, query);
  return { ...page, items: page.items.map(toAttempt) };
}

/**
 * Manual resend: queues an immediate attempt that a delivery worker makes (never inside this
 * transaction: no network I/O while a transaction is open). A sent or failed delivery gets one
 * extra attempt outside the retry schedule; a waiting one is moved up to now.
 */
export async function resend(db: Queryable, ctx: Scope, deliveryId: string): Promise<ResendResponse> {
  const d = await repo.findDelivery(db, ctx, deliveryId);
  if (!d) throw notFound('Webhook event');
  const endpoint = await repo.findEndpoint(db, ctx, d.endpoint_id);
  if (!endpoint) throw new AppError('invalid_state_transition', 'The webhook endpoint of this event was deleted');
  if (endpoint.status !== 'enabled') {
    throw endpointDisabled();
  }
  if (d.status === 'processing') {
    throw eventInDelivery();
  }
  const updated = await repo.requeueDelivery(db, ctx, deliveryId, d.status === 'sent' || d.status === 'failed');
  if (!updated) throw eventInDelivery();
  return {
    id: updated.id,
    tenant_id: updated.tenant_id,
    event_id: updated.event_id,
    event_type: updated.event_type,
    event_category: updated.event_type.split('.')[0] as string,
    target_url: endpoint.url,
    status: updated.status,
    next_attempt: updated.next_attempt_at?.toISOString() ?? null,
  };
}

// ---- events (the dashboard's events pages) ---------------------------------------------------

export interface EventSummary {
  id: string;
  event_type: string;
  event_group_id: string;
  created_at: string;
}

const toEventSummary = (e: eventsRepo.EventSummaryRow): EventSummary => ({
  id: e.id,
  event_type: e.event_type,
  event_group_id: e.event_group_id,
  created_at: e.created_at.toISOString(),
});

export async function listEvents(
  db: Queryable,
  ctx: Scope,
  query: PageQuery & { event_type?: string; group_id?: string },
): Promise<Page<EventSummary>> {
  const page = await eventsRepo.listEvents(db, ctx, query);
  return { ...page, items: page.items.map(toEventSummary) };
}

/** One event with its payload and its deliveries (one per endpoint it went to). */
export async function getEvent(db: Queryable, ctx: Scope, id: string) {
  const row = await eventsRepo.findEvent(db, ctx, id);
  if (!row) throw notFound('Event');
  const deliveries = await repo.listDeliveries(db, ctx, { event_id: id, page: 1, items_per_page: 100 });
  return { ...toEventSummary(row), payload: row.payload, deliveries: deliveries.items.map(toSummary) };
}

/** The events of these resources (by event_group_id), oldest first (a timeline) or the latest, newest first. */
export async function eventsOf(db: Queryable, ctx: Scope, groupIds: string[], order: 'asc' | 'desc' = 'asc'): Promise<EventSummary[]> {
  return (await eventsRepo.eventsOfGroups(db, ctx, [...new Set(groupIds)].slice(0, 20), order)).map(toEventSummary);
}

export { TEST_EVENT_TYPE } from './events-repo.js';
const TEST_EVENT_TYPE = eventsRepo.TEST_EVENT_TYPE;

/** Queues a signed test event to one enabled endpoint; returns the delivery to watch. */
export async function sendTestEvent(trx: Trx, ctx: Scope, endpointId: string): Promise<{ delivery_id: string; event_id: string }> {
  const endpoint = await requireEndpoint(trx, ctx, endpointId);
  if (endpoint.status !== 'enabled') throw endpointDisabled();
  const eventId = newId();
  const deliveryId = newId();
  const payload = {
    event_id: eventId,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    timestamp: new Date().toISOString(),
    event_type: TEST_EVENT_TYPE as EventPayload['event_type'],
    event_category: 'webhook',
    event_group_id: endpointId,
    event_data: { endpoint_id: endpointId, message: 'A test event sent from the dashboard' },
  };
  await eventsRepo.insertTestEvent(trx, ctx, { eventId, deliveryId, endpointId }, payload);
  return { delivery_id: deliveryId, event_id: eventId };
}

// ---- the events API and replays ---------------------------------------------------------------

function toEvent(row: eventsRepo.EventWithSequenceRow): EventResponse {
  return {
    ...row.payload,
    event_data: row.payload.event_data as Record<string, unknown>,
    ...(row.sequence === null ? {} : { sequence: Number(row.sequence) }),
  };
}

/** A business's events, newest (or oldest) first: what its webhooks carried, readable without them. */
export async function listApiEvents(db: Queryable, ctx: Scope, query: ListEventsQuery): Promise<Page<EventResponse>> {
  const page = await eventsRepo.listEventPayloads(db, ctx, query);
  return { ...page, items: page.items.map(toEvent) };
}

export async function getApiEvent(db: Queryable, ctx: Scope, id: string): Promise<EventResponse> {
  const row = await eventsRepo.findEventPayload(db, ctx, id);
  if (!row) throw notFound('Event');
  return toEvent(row);
}

/** A `from`/`to` value as an instant; a date-only `to` means the end of that day. */
function instant(value: string, end: boolean): Date {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) return new Date(Date.parse(`${value}T00:00:00Z`) + (end ? 86_400_000 : 0));
  return new Date(value);
}

/**
 * Replays an endpoint's events of a time range (like Svix's recover): each delivery that failed
 * (scope `failed`), or every event of the range the endpoint subscribes to (scope `all`, also
 * those it never got), gets one more attempt, sent by the delivery workers. Bounded (at most
 * MAX_REPLAY_DAYS and MAX_REPLAY_EVENTS), and idempotent in effect: a delivery still waiting or in
 * flight is not queued again, so replaying twice never sends an event twice at once.
 */
export async function replay(trx: Trx, ctx: Scope, endpointId: string, input: ReplayBody): Promise<ReplayResponse> {
  const from = instant(input.from, false);
  const to = input.to ? instant(input.to, true) : new Date();
  if (to <= from) throw validationError([{ field: 'to', code: 'invalid', message: 'to must be after from' }]);
  if (to.getTime() - from.getTime() > MAX_REPLAY_DAYS * 86_400_000) {
    throw validationError([{ field: 'to', code: 'invalid', message: `A replay covers at most ${MAX_REPLAY_DAYS} days` }]);
  }
  const endpoint = await requireEndpoint(trx, ctx, endpointId, 'update');
  if (endpoint.status !== 'enabled') throw endpointDisabled();
  const range = { fromId: uuidv7LowerBound(from), toIdExclusive: uuidv7LowerBound(to) };
  const { queued, alreadyQueued } =
    input.scope === 'failed'
      ? await replayFailed(trx, ctx, endpointId, range)
      : await replayAll(trx, ctx, endpointId, range, endpoint.event_types);
  const id = newId();
  const created = await eventsRepo.insertReplay(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    endpoint_id: endpointId,
    scope: input.scope,
    range_from: from,
    range_to: to,
    queued,
  });
  return {
    id,
    endpoint_id: endpointId,
    scope: input.scope,
    from: from.toISOString(),
    to: to.toISOString(),
    queued,
    already_queued: alreadyQueued,
    date_created: created.toISOString(),
  };
}

type ReplayRange = { fromId: string; toIdExclusive: string };

const tooMany = () => new AppError('limit_exceeded', `A replay queues at most ${MAX_REPLAY_EVENTS} events; choose a shorter time range`);

/** Scope `failed`: each delivery of the range that failed is queued once more. */
async function replayFailed(trx: Trx, ctx: Scope, endpointId: string, range: ReplayRange) {
  const failed = await eventsRepo.deliveriesInRange(trx, ctx, endpointId, range, 'failed', MAX_REPLAY_EVENTS + 1);
  if (failed.length > MAX_REPLAY_EVENTS) throw tooMany();
  const queued = await eventsRepo.requeueFinished(
    trx,
    ctx,
    endpointId,
    failed.map((d) => d.id),
  );
  return { queued, alreadyQueued: 0 };
}

/**
 * Scope `all`: every event of the range the endpoint subscribes to, finished deliveries queued
 * again, events it never got given a delivery; one still waiting or in flight is left alone.
 */
async function replayAll(trx: Trx, ctx: Scope, endpointId: string, range: ReplayRange, types: string[] | null) {
  const events = await eventsRepo.eventIdsInRange(trx, ctx, { ...range, types }, MAX_REPLAY_EVENTS + 1);
  if (events.length > MAX_REPLAY_EVENTS) throw tooMany();
  const existing = await eventsRepo.deliveriesInRange(trx, ctx, endpointId, range, null, 10 * MAX_REPLAY_EVENTS);
  const byEvent = new Map(existing.map((d) => [d.event_id, d]));
  const finished = existing.filter((d) => d.status === 'sent' || d.status === 'failed').map((d) => d.id);
  let queued = await eventsRepo.requeueFinished(trx, ctx, endpointId, finished);
  queued += await eventsRepo.insertReplayDeliveries(
    trx,
    events
      .filter((e) => !byEvent.has(e.id))
      .map((e) => ({
        id: newId(),
        tenant_id: ctx.tenantId,
        environment: ctx.environment,
        event_id: e.id,
        endpoint_id: endpointId,
        event_type: e.event_type,
        transaction_id: e.transaction_id,
        status: 'retrying' as const,
        manual: true,
        next_attempt_at: new Date(),
      })),
  );
  return { queued, alreadyQueued: existing.length - finished.length };
}
