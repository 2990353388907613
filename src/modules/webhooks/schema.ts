import { z } from 'zod';
import { DateParam, PageQuery } from '../../db/pagination.js';
import { UuidParam } from '../../lib/validators.js';
import { EVENT_TYPES } from './outbox.js';

export const DELIVERY_STATUSES = ['pending', 'processing', 'sent', 'failed', 'retrying'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const EventTypeList = z
  .array(z.enum(EVENT_TYPES, { message: `Must be one of the event types: ${EVENT_TYPES.join(', ')}` }))
  .max(EVENT_TYPES.length);

const Url = z.string().trim().min(1).max(2048);

export const CreateEndpointBody = z
  .strictObject({
    url: Url,
    /** Absent, null or empty: every event type. */
    event_types: EventTypeList.nullable().optional(),
  })
  .meta({ id: 'CreateWebhookEndpointRequest' });
export type CreateEndpointBody = z.infer<typeof CreateEndpointBody>;

export const UpdateEndpointBody = z
  .strictObject({
    url: Url.optional(),
    event_types: EventTypeList.nullable().optional(),
    status: z.enum(['enabled', 'disabled']).optional(),
  })
  .meta({ id: 'UpdateWebhookEndpointRequest' });
export type UpdateEndpointBody = z.infer<typeof UpdateEndpointBody>;

/** Longest overlap during which the old secret still signs: 7 days. */
export const MAX_OVERLAP_SECONDS = 7 * 86_400;
export const DEFAULT_OVERLAP_SECONDS = 86_400;

export const RotateSecretBody = z
  .strictObject({
    expire_old_in_seconds: z.number().int().min(0).max(MAX_OVERLAP_SECONDS).optional(),
  })
  .meta({ id: 'RotateWebhookSecretRequest' });
export type RotateSecretBody = z.infer<typeof RotateSecretBody>;

export const EndpointResponse = z
  .object({
    id: z.string(),
    url: z.string(),
    /** Empty: every event type. */
    event_types: z.array(z.string()),
    status: z.enum(['enabled', 'disabled']),
    disabled_reason: z.string().nullable(),
    previous_secret_expires_at: z.string().nullable(),
    /**
     * Delivery circuit: closed (delivering), open (paused after failing everything; events wait
     * and are sent when it closes) or probing (one delivery at a time until one succeeds).
     */
    circuit: z.enum(['closed', 'open', 'probing']),
    circuit_open_until: z.string().nullable(),
    /** Failed attempts in a row. */
    consecutive_failures: z.number().int(),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'WebhookEndpoint' });
export type EndpointResponse = z.infer<typeof EndpointResponse>;

/** Only the create and rotate answers carry the secret, in full. */
export const EndpointWithSecretResponse = EndpointResponse.extend({ secret: z.string() }).meta({
  id: 'WebhookEndpointWithSecret',
});
export type EndpointWithSecretResponse = z.infer<typeof EndpointWithSecretResponse>;

export const DeletedResponse = z.object({ id: z.string(), deleted: z.boolean() });

export const IdParams = z.strictObject({ id: UuidParam });

export const ListEndpointsQuery = PageQuery.extend({
  status: z.enum(['enabled', 'disabled']).optional(),
});
export type ListEndpointsQuery = z.infer<typeof ListEndpointsQuery>;

export const HistoryQuery = PageQuery.extend({
  event_type: z.enum(EVENT_TYPES).optional(),
  status: z.enum(DELIVERY_STATUSES).optional(),
  transaction_id: z.string().trim().min(1).max(255).optional(),
  event_id: UuidParam.optional(),
  endpoint_id: UuidParam.optional(),
});
export type HistoryQuery = z.infer<typeof HistoryQuery>;

const JsonObject = z.record(z.string(), z.unknown());

export const DeliverySummary = z
  .object({
    id: z.string(),
    event_id: z.string(),
    endpoint_id: z.string(),
    transaction_id: z.string().nullable(),
    event_type: z.string(),
    path: z.string(),
    http_method: z.literal('POST'),
    status: z.enum(DELIVERY_STATUSES),
    response_status_code: z.number().int().nullable(),
    attempts: z.number().int(),
    created_at: z.string(),
    last_attempt: z.string().nullable(),
    next_attempt: z.string().nullable(),
  })
  .meta({ id: 'WebhookHistorySummary' });
export type DeliverySummary = z.infer<typeof DeliverySummary>;

export const DeliveryDetail = DeliverySummary.extend({
  request_headers: JsonObject.nullable(),
  payload: JsonObject,
  response_headers: JsonObject.nullable(),
  /** The response body when it was a JSON object, else `{text}` with the excerpt. */
  response_body: JsonObject.nullable(),
  error: z.string().nullable(),
  max_retries: z.number().int(),
  updated_at: z.string(),
}).meta({ id: 'WebhookEventDetail' });
export type DeliveryDetail = z.infer<typeof DeliveryDetail>;

export const AttemptResponse = z
  .object({
    id: z.string(),
    delivery_id: z.string(),
    event_id: z.string(),
    endpoint_id: z.string(),
    attempt: z.number().int(),
    trigger: z.enum(['scheduled', 'manual']),
    target_url: z.string(),
    http_method: z.literal('POST'),
    request_headers: JsonObject,
    status_code: z.number().int().nullable(),
    duration_ms: z.number().int(),
    response_headers: JsonObject.nullable(),
    response_body: JsonObject.nullable(),
    error: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'WebhookAttempt' });
export type AttemptResponse = z.infer<typeof AttemptResponse>;

export const AttemptsQuery = PageQuery;
export type AttemptsQuery = z.infer<typeof AttemptsQuery>;

/** Manual resend: queued for an immediate attempt; the outcome shows in the call history. */
export const ResendResponse = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    event_id: z.string(),
    event_type: z.string(),
    event_category: z.string(),
    target_url: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    next_attempt: z.string().nullable(),
  })
  .meta({ id: 'WebhookResend' });
export type ResendResponse = z.infer<typeof ResendResponse>;

// ---- events (catching up without webhooks) and replays ------------------------------------------

export const ListEventsQuery = PageQuery.extend({
  event_type: z.enum(EVENT_TYPES).optional(),
  /** The resource the event is about (its event_group_id: a customer, transfer, card … id). */
  resource_id: z.string().trim().min(1).max(255).optional(),
  /** desc: newest first (the default, like every list); asc: oldest first, to catch up in order. */
  order: z.enum(['asc', 'desc']).default('desc'),
});
export type ListEventsQuery = z.infer<typeof ListEventsQuery>;

/** An event as its webhook carries it, with its sequence number once the fan-out has given it one. */
export const EventResponse = z
  .object({
    event_id: z.string(),
    tenant_id: z.string(),
    environment: z.string(),
    timestamp: z.string(),
    event_type: z.string(),
    event_category: z.string(),
    event_group_id: z.string(),
    event_data: z.record(z.string(), z.unknown()),
    /** Per business and environment, increasing in the order events were committed; absent for a moment after the commit. */
    sequence: z.number().int().optional(),
  })
  .meta({ id: 'Event' });
export type EventResponse = z.infer<typeof EventResponse>;

/** Longest time range one replay covers, and most events it queues. */
export const MAX_REPLAY_DAYS = 14;
export const MAX_REPLAY_EVENTS = 10_000;

export const ReplayBody = z
  .strictObject({
    /** Start of the range (events created at or after it). */
    from: DateParam,
    /** End of the range (default: now). */
    to: DateParam.optional(),
    /** failed (default): the endpoint's deliveries that failed; all: every event of the range it subscribes to. */
    scope: z.enum(['failed', 'all']).default('failed'),
  })
  .meta({ id: 'WebhookReplayRequest' });
export type ReplayBody = z.infer<typeof ReplayBody>;

export const ReplayResponse = z
  .object({
    id: z.string(),
    endpoint_id: z.string(),
    scope: z.enum(['failed', 'all']),
    from: z.string(),
    to: z.string(),
    /** Deliveries queued for one more attempt each. */
    queued: z.number().int(),
    /** Events of the range whose delivery to this endpoint is already waiting or in flight (not queued twice). */
    already_queued: z.number().int(),
    date_created: z.string(),
  })
  .meta({ id: 'WebhookReplay' });
export type ReplayResponse = z.infer<typeof ReplayResponse>;
