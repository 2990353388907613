import type { FastifyReply } from 'fastify';
import { sql, type RawBuilder } from 'kysely';

/** Thrown by a claim that finds a finished request: the route answers with the stored response. */
export class ReplayResponse extends Error {
  constructor(
    readonly status: number,
    readonly bodyText: string,
  ) {
    super('idempotent replay');
  }
}

/** What a completed Idempotency-Key record holds of its answer: its text, or the event whose data it is. */
export interface StoredAnswer {
  response_status: number | null;
  response_body: string | null;
  response_sealed: boolean;
  /** The data of the event the record points at (`response_event_id`, migration 1262), read with the record. */
  response_data: unknown;
}

/** `response_data` of a record aliased `record` in the query: its event's data, or null. */
export const responseData = (record: string): RawBuilder<unknown> =>
  sql`(select e.event_data from events e where e.id = ${sql.ref(`${record}.response_event_id`)})`;

/**
 * The replay of a completed record: its stored text (opened when sealed), or its event's data
 * written as the route writes its answers. The route's response schema writes keys in its own
 * order whatever the object's (http/serializer.ts), so that text is the first answer's, byte for
 * byte. Null when the record holds no answer.
 */
export function replayOf(record: StoredAnswer, reply: FastifyReply, open: (sealed: string) => string): ReplayResponse | null {
  const status = record.response_status;
  if (status === null) return null;
  if (record.response_body !== null)
    return new ReplayResponse(status, record.response_sealed ? open(record.response_body) : record.response_body);
  if (record.response_data === null || record.response_data === undefined) return null;
  reply.code(status);
  return new ReplayResponse(status, reply.serialize({ data: record.response_data, error: null }) as string);
}
