import { sql, type Insertable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { EventPayload } from './outbox.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from './repo.js';

/**
 * The worker side of the webhook tables (fan-out and delivery queue). Part of this module's
 * repository, kept apart from repo.ts because none of it is scoped to one business: workers
 * serve every tenant, claiming rows with FOR UPDATE SKIP LOCKED so any number can run.
 */

export interface NewEvent {
  id: string;
  tenant_id: string;
  environment: string;
  event_type: string;
  transaction_id: string | null;
  created_at: Date;
}

/**
 * Events not fanned out yet, oldest first: their queue rows are locked for this transaction
 * (other workers skip them). A queue row whose event is missing (none is written without its
 * event) comes back as an id only, so the caller drops it with the rest.
 */
export async function claimNewEvents(trx: Queryable, limit: number): Promise<{ queued: string[]; events: NewEvent[] }> {
  const { rows } = await sql<{ queued: string } & Partial<NewEvent>>`
    select q.event_id as queued, e.id, e.tenant_id, e.environment, e.event_type, e.created_at,
      e.payload->'event_data'->>'transaction_id' as transaction_id
    from (select event_id from event_fanout_queue order by event_id limit ${limit} for update skip locked) q
    left join events e on e.id = q.event_id
    order by q.event_id`.execute(trx);
  return { queued: rows.map((r) => r.queued), events: rows.filter((r): r is typeof r & NewEvent => typeof r.id === 'string') };
}

export interface FanoutEndpoint {
  id: string;
  tenant_id: string;
  environment: string;
  event_types: string[] | null;
  created_at: Date;
}

/** The enabled endpoints of these businesses and environments. */
export async function enabledEndpointsOf(trx: Queryable, scopes: { tenant_id: string; environment: string }[]) {
  if (scopes.length === 0) return [];
  return (
    trx
      .selectFrom('webhook_endpoints')
      .select(['id', 'tenant_id', 'environment', 'event_types', 'created_at'])
      .where('deleted_at', 'is', null)
      .where('status', '=', 'enabled')
      // eslint-disable-next-line no-restricted-syntax -- set-based over the businesses of a batch of events
      .where((eb) => eb.or(scopes.map((s) => eb.and([eb('tenant_id', '=', s.tenant_id), eb('environment', '=', s.environment)]))))
      .execute() as Promise<FanoutEndpoint[]>
  );
}

export async function insertDeliveries(trx: Queryable, rows: Insertable<WebhookDeliveriesTable>[]) {
  if (rows.length === 0) return;
  // Unique (endpoint_id, event_id): fanning an event out twice never doubles a delivery.
  await trx
    .insertInto('webhook_deliveries')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** Takes these events off the fan-out queue (their deliveries were created in this transaction). */
export async function markFannedOut(trx: Queryable, ids: string[]) {
  if (ids.length === 0) return;
  await trx.deleteFrom('event_fanout_queue').where('event_id', 'in', ids).execute();
}

export interface ClaimLimits {
  /** Deliveries of one endpoint in flight at once, across all workers. */
  perEndpoint: number;
  /** This worker's own in-flight deliveries per endpoint (not committed as processing yet). */
  localInFlight?: ReadonlyMap<string, number>;
}

export interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  /** When it was due: the schedule this attempt follows. */
  due_at: Date;
}

/**
 * Claims due deliveries of enabled endpoints whose circuit is closed: locks them (skipping rows
 * other workers hold; only the rows it takes), keeps at most `perEndpoint` of each endpoint in flight (counting the
 * processing rows of every worker whose lease still runs), marks them processing under a lease
 * token, and sets the lease expiry as next_attempt_at so a crashed worker's deliveries are taken
 * again when the lease runs out. Concurrent claims never wait for each other; workers claiming
 * the same endpoint at the same instant can each take its free slots (an overshoot bounded by the
 * number of workers claiming at once).
 */
export async function claimDue(
  trx: Queryable,
  limit: number,
  leaseMs: number,
  token: string,
  limits: ClaimLimits,
): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return [];
  // Endpoints already at their limit are left out in the query itself, so their backlog never
  // crowds other endpoints' due deliveries out of the claim.
  const { rows } = await sql<ClaimedDelivery>`
    with busy as (
      select endpoint_id from webhook_deliveries
      where status = 'processing' and next_attempt_at > now()
      group by endpoint_id having count(*) >= ${limits.perEndpoint})
    select d.id, d.endpoint_id, d.next_attempt_at as due_at from webhook_deliveries d
    join webhook_endpoints e on e.id = d.endpoint_id
    where d.status in ('pending', 'retrying', 'processing') and d.next_attempt_at <= now()
      and e.status = 'enabled' and e.deleted_at is null
      and (e.circuit_open_until is null or e.circuit_open_until <= now())
      and d.endpoint_id not in (select endpoint_id from busy)
    order by d.next_attempt_at
    limit ${limit * 4}`.execute(trx);
  if (rows.length === 0) return [];
  const endpoints = [...new Set(rows.map((r) => r.endpoint_id))];
  const busy = await sql<{ endpoint_id: string; n: number }>`
    select endpoint_id, count(*)::int as n from webhook_deliveries
    where status = 'processing' and next_attempt_at > now() and endpoint_id in (${sql.join(endpoints)})
    group by endpoint_id`.execute(trx);
  const inFlight = new Map(busy.rows.map((b) => [b.endpoint_id, b.n]));
  for (const [id, n] of limits.localInFlight ?? []) inFlight.set(id, Math.max(inFlight.get(id) ?? 0, n));
  const picked: ClaimedDelivery[] = [];
  for (const row of rows) {
    if (picked.length >= limit) break;
    const n = inFlight.get(row.endpoint_id) ?? 0;
    if (n >= limits.perEndpoint) continue;
    inFlight.set(row.endpoint_id, n + 1);
    picked.push(row);
  }
  if (picked.length === 0) return [];
  // Only the picked rows are locked (the candidates above were read without locks, so rows this
  // claim does not take stay free for other workers); the lock rechecks that each is still due.
  const locked = await sql<{ id: string }>`
    select id from webhook_deliveries
    where id in (${sql.join(picked.map((r) => r.id))})
      and status in ('pending', 'retrying', 'processing') and next_attempt_at <= now()
    for update skip locked`.execute(trx);
  const ids = new Set(locked.rows.map((r) => r.id));
  if (ids.size === 0) return [];
  await sql`
    update webhook_deliveries set status = 'processing', lease_token = ${token},
      next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
    where id in (${sql.join([...ids])})`.execute(trx);
  return picked.filter((r) => ids.has(r.id));
}

/** The ids of claimed deliveries, with no per-endpoint limit beyond `limit` (tests, CLI). */
export async function claimDueDeliveries(trx: Queryable, limit: number, leaseMs: number, token: string, perEndpoint = limit) {
  return (await claimDue(trx, limit, leaseMs, token, { perEndpoint })).map((c) => c.id);
}

/**
 * The endpoint's circuit after an attempt: a success closes it; a failure counts, and from
 * `threshold` failures in a row the circuit opens for `openMs` doubled per further failure, up
 * to `maxOpenMs`. While open, no delivery of the endpoint is claimed (none holds a worker).
 */
export async function noteEndpointOutcome(
  trx: Queryable,
  endpointId: string,
  success: boolean,
  circuit: { threshold: number; openMs: number; maxOpenMs: number },
) {
  if (success) {
    await sql`
      update webhook_endpoints set consecutive_failures = 0, circuit_open_until = null
      where id = ${endpointId} and (consecutive_failures > 0 or circuit_open_until is not null)`.execute(trx);
    return;
  }
  await sql`
    update webhook_endpoints set consecutive_failures = consecutive_failures + 1,
      circuit_open_until = case when consecutive_failures + 1 >= ${circuit.threshold}
        then now() + make_interval(secs => least(${circuit.maxOpenMs}::float8,
          ${circuit.openMs}::float8 * power(2, least(consecutive_failures + 1 - ${circuit.threshold}, 30))) / 1000)
        else circuit_open_until end
    where id = ${endpointId}`.execute(trx);
}

export interface DeliveryWork {
  id: string;
  tenant_id: string;
  environment: string;
  event_id: string;
  endpoint_id: string;
  attempts: number;
  manual: boolean;
  url: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  payload: EventPayload;
}

/** What sending the claimed deliveries needs: URL, sealed secrets and the event's payload. */
export async function loadDeliveryWork(db: Queryable, ids: string[]): Promise<DeliveryWork[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .innerJoin('events as ev', 'ev.id', 'd.event_id')
    .select([
      'd.id',
      'd.tenant_id',
      'd.environment',
      'd.event_id',
      'd.endpoint_id',
      'd.attempts',
      'd.manual',
      'e.url',
      'e.secret_sealed',
      'e.previous_secret_sealed',
      'e.previous_secret_expires_at',
      'ev.payload',
    ])
    .where('d.id', 'in', ids)
    .execute();
}

export interface DeliveryOutcome {
  status: 'sent' | 'retrying' | 'failed';
  nextAttemptAt: Date | null;
  statusCode: number | null;
}

export type NewAttempt = Insertable<WebhookAttemptsTable>;

/**
 * Records a batch's attempts and their deliveries' new states. A state changes only if this
 * worker still holds the lease (else another worker took it over after the lease ran out); the
 * attempt is kept either way, since the request was made. Returns the deliveries still held.
 */
export async function recordAttempts(
  trx: Queryable,
  token: string,
  items: { attempt: NewAttempt; outcome: DeliveryOutcome }[],
): Promise<Set<string>> {
  const held = new Set<string>();
  if (items.length === 0) return held;
  await trx
    .insertInto('webhook_attempts')
    .values(items.map((i) => i.attempt))
    .execute();
  for (const { attempt, outcome } of items) {
    const result = await trx
      .updateTable('webhook_deliveries')
      .set({
        status: outcome.status,
        next_attempt_at: outcome.nextAttemptAt,
        attempts: sql<number>`attempts + 1`,
        manual: false,
        lease_token: null,
        last_attempt_at: new Date(),
        last_status_code: outcome.statusCode,
        updated_at: new Date(),
      })
      .where('id', '=', attempt.delivery_id)
      .where('lease_token', '=', token)
      .where('status', '=', 'processing')
      .executeTakeFirst();
    if (result.numUpdatedRows > 0n) held.add(attempt.delivery_id);
  }
  return held;
}
