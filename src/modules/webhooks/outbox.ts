import type { ColumnType } from 'kysely';
import { write, type Writer } from '../../db/write-set.js';
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
  payload: ColumnType<EventPayload, string, never>;
  created_at: ColumnType<Date, never, never>;
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

function eventOf(ctx: EventScope, eventType: EventType, data: { id?: string } & object, groupId?: string): EventPayload {
  const id = newId();
  return {
    event_id: id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    timestamp: clockTime().toISOString(),
    event_type: eventType,
    event_category: eventType.split('.')[0] as string,
    event_group_id: groupId ?? data.id ?? id,
    event_data: data,
  };
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

/**
 * Many events in one statement (a batch of money movements), same rule as recordEvent. The
 * database queues each for the webhook fan-out in the same statement (migration 1100's trigger).
 */
export async function recordEvents(
  to: Writer,
  list: { ctx: EventScope; eventType: EventType; data: { id?: string } & object; groupId?: string }[],
): Promise<EventPayload[]> {
  const payloads = list.map((e) => eventOf(e.ctx, e.eventType, e.data, e.groupId));
  if (payloads.length === 0) return payloads;
  await write(to, (db) =>
    db.insertInto('events').values(
      payloads.map((p) => ({
        id: p.event_id,
        tenant_id: p.tenant_id,
        environment: p.environment,
        event_type: p.event_type,
        event_category: p.event_category,
        event_group_id: p.event_group_id,
        payload: JSON.stringify(p),
      })),
    ),
  );
  return payloads;
}
