import { sql, type ColumnType, type Insertable, type RawBuilder } from 'kysely';
import { write, type Writer } from '../../db/write-set.js';
import { insertPerShape } from '../../db/compiled.js';
import type { RequestContext } from '../../core/context.js';
import { newId } from '../../lib/ids.js';
import { clockTime } from '../../core/clock.js';

/** The closed list of event types (docs/api-rules.md#closed-lists). */
export const EVENT_TYPES = [
  'customer.created',
  'customer.kyc.status.pending',
  'customer.kyc.status.manual_review',
  'customer.kyc.status.approved',
  'customer.kyc.status.rejected',
  'feature.activated',
  'account.created',
  'account.status.updated',
  'payee.setup.pending',
  'payee.setup.completed',
  'payee.setup.failed',
  'transfer.status.pending',
  'transfer.status.processing',
  'transfer.status.completed',
  'transfer.status.failed',
  'transfer.status.returned',
  'collection.status.pending',
  'collection.status.completed',
  'collection.status.failed',
  'collection.status.expired',
  'cards.application.update',
  'cards.status.update',
  'cards.transaction.funding',
  'cards.transaction.payment',
  'cards.transaction.withdraw',
  'cards.transaction.declined',
  'fx.order.completed',
  'fx.order.cancelled',
  'fx.order.expired',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventsTable {
  id: string;
  tenant_id: string;
  environment: string;
  event_type: string;
  event_category: string;
  event_group_id: string;
  // `payload` (the whole envelope of rows written before migration 1230) is left out on purpose:
  // read an event through eventEnvelope() or eventData(), which take both forms.
  created_at: ColumnType<Date, never, never>;
  /** The envelope's timestamp (null on rows from before migration 1230). */
  occurred_at: ColumnType<Date | null, string, never>;
  /** The envelope's event_data (null on rows from before migration 1230). */
  event_data: ColumnType<unknown, string, never>;
}

/** Events whose webhook deliveries are not created yet: the fan-out's queue, filled by a trigger on events (migration 1100). */
export interface EventFanoutQueueTable {
  event_id: string;
}

/** Each event's number in its business and environment, given by the fan-out (migration 1170). */
export interface EventSequencesTable {
  event_id: string;
  tenant_id: string;
  environment: string;
  sequence: ColumnType<string, string | bigint, never>;
}

export interface EventSequenceCountersTable {
  tenant_id: string;
  environment: string;
  last_sequence: ColumnType<string, string | bigint, string | bigint>;
}

declare module '../../db/types.js' {
  interface Database {
    events: EventsTable;
    event_fanout_queue: EventFanoutQueueTable;
    event_sequences: EventSequencesTable;
    event_sequence_counters: EventSequenceCountersTable;
  }
}

export interface EventPayload {
  event_id: string;
  tenant_id: string;
  environment: string;
  timestamp: string;
  event_type: EventType;
  event_category: string;
  event_group_id: string;
  event_data: unknown;
  /** Added when sent (and listed): the event's number in its business and environment. */
  sequence?: number;
}

type EventScope = Pick<RequestContext, 'tenantId' | 'environment'>;

function eventOf(ctx: EventScope, eventType: EventType, data: { id?: string } & object, timestamp: string, groupId?: string): EventPayload {
  const id = newId();
  return {
    event_id: id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    timestamp,
    event_type: eventType,
    event_category: eventType.split('.')[0] as string,
    event_group_id: groupId ?? data.id ?? id,
    event_data: data,
  };
}

/** The row of an event: its envelope less what the row's columns already say (migration 1230). */
export function eventRow(p: EventPayload): Insertable<EventsTable> {
  return {
    id: p.event_id,
    tenant_id: p.tenant_id,
    environment: p.environment,
    event_type: p.event_type,
    event_category: p.event_category,
    event_group_id: p.event_group_id,
    occurred_at: p.timestamp,
    event_data: JSON.stringify(p.event_data),
  };
}

/**
 * An event's webhook envelope, rebuilt from its row (`table`: the events table's name or alias in
 * the query): the payload of a row from before migration 1230, else the same object built from
 * the row's columns. jsonb orders an object's keys itself (shorter first, then bytewise), so both
 * forms read back key for key alike: webhook bodies (signed as sent) and the API's answers stay
 * byte-identical. `timestamp` comes back as the application wrote it (toISOString: milliseconds, Z).
 */
export function eventEnvelope(table = 'events'): RawBuilder<EventPayload> {
  const col = (name: string) => sql.ref(`${table}.${name}`);
  return sql<EventPayload>`coalesce(${col('payload')}, jsonb_build_object(
    'event_id', ${col('id')}, 'tenant_id', ${col('tenant_id')}, 'environment', ${col('environment')},
    'timestamp', to_char(${col('occurred_at')} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'event_type', ${col('event_type')}, 'event_category', ${col('event_category')}, 'event_group_id', ${col('event_group_id')},
    'event_data', ${col('event_data')}))`;
}

/** An event's event_data (jsonb), from either form of its row (see eventEnvelope). */
export function eventData(table = 'events'): RawBuilder<unknown> {
  return sql`coalesce(${sql.ref(`${table}.event_data`)}, ${sql.ref(`${table}.payload`)}->'event_data')`;
}

/**
 * Writes an event to the outbox. Call it with the transaction that makes the change it reports:
 * the event then exists exactly when the change does (no event for rolled-back work, none lost).
 * `groupId` ties events of one resource together (its id by default).
 */
export async function recordEvent(
  to: Writer,
  ctx: EventScope,
  eventType: EventType,
  data: { id?: string } & object,
  groupId?: string,
): Promise<EventPayload> {
  return (await recordEvents(to, [{ ctx, eventType, data, ...(groupId ? { groupId } : {}) }]))[0]!;
}

const insertEvents = insertPerShape('events');

/**
 * Many events in one statement (a batch of money movements), same rule as recordEvent. The
 * database queues each for the webhook fan-out in the same statement (migration 1100's trigger).
 */
export async function recordEvents(
  to: Writer,
  list: { ctx: EventScope; eventType: EventType; data: { id?: string } & object; groupId?: string }[],
): Promise<EventPayload[]> {
  // One reading of the clock for the statement: its events are written together, and their rows
  // then share the timestamp's column (db/compiled.ts insertPerShape): a timestamp read per
  // event would fall in one millisecond or not by chance, and the statement's text with it.
  const timestamp = clockTime().toISOString();
  const payloads = list.map((e) => eventOf(e.ctx, e.eventType, e.data, timestamp, e.groupId));
  if (payloads.length === 0) return payloads;
  await write(to, (db) => insertEvents(db, payloads.map(eventRow)));
  return payloads;
}
