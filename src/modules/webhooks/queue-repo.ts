import { sql, type Insertable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import { valuesOf } from '../../db/values.js';
import { eventData, eventEnvelope, type EventPayload } from './outbox.js';
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
      ${eventData('e')}->>'transaction_id' as transaction_id
    from (select event_id from event_fanout_queue order by event_id limit ${limit} for update skip locked) q
    left join events e on e.id = q.event_id
    order by q.event_id`.execute(trx);
  return { queued: rows.map((r) => r.queued), events: rows.filter((r): r is typeof r & NewEvent => typeof r.id === 'string') };
}

/**
 * Numbers these events per business and environment, after every event numbered before them:
 * each scope's counter row is bumped by its count (scopes in a fixed order, so fan-outs running at
 * once lock them in the same order), and the row stays locked until this transaction commits,
 * so a later fan-out's numbers are higher and are seen only after these. The events were all
 * committed before this fan-out claimed them: the numbers follow the order events become
 * visible, oldest id first within a batch.
 */
export async function assignSequences(trx: Queryable, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const byScope = new Map<string, NewEvent[]>();
  for (const e of [...events].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const key = `${e.tenant_id}:${e.environment}`;
    byScope.set(key, [...(byScope.get(key) ?? []), e]);
  }
  const scopes = [...byScope.keys()].sort();
  const counters = valuesOf(
    'c',
    { tenant_id: 'uuid', environment: 'text', n: 'int8' },
    scopes.map((key) => {
      const first = byScope.get(key)![0]!;
      return [first.tenant_id, first.environment, byScope.get(key)!.length];
    }),
  );
  const { rows } = await sql<{ tenant_id: string; environment: string; last_sequence: string }>`
    insert into event_sequence_counters (tenant_id, environment, last_sequence)
    select tenant_id, environment, n from ${counters}
    on conflict (tenant_id, environment) do update set last_sequence = event_sequence_counters.last_sequence + excluded.last_sequence
    returning tenant_id, environment, last_sequence::text as last_sequence`.execute(trx);
  const numbered: { event_id: string; tenant_id: string; environment: string; sequence: string }[] = [];
  for (const row of rows) {
    const list = byScope.get(`${row.tenant_id}:${row.environment}`)!;
    const firstNumber = BigInt(row.last_sequence) - BigInt(list.length) + 1n;
    list.forEach((e, i) =>
      numbered.push({ event_id: e.id, tenant_id: e.tenant_id, environment: e.environment, sequence: String(firstNumber + BigInt(i)) }),
    );
  }
  await trx
    .insertInto('event_sequences')
    .values(numbered)
    .onConflict((oc) => oc.doNothing())
    .execute();
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
  /** Deliveries of one endpoint in flight at once, across all workers (its base slots). */
  perEndpoint: number;
  /**
   * The bound while requests hang: a request in flight longer than `slowMs` stops counting
   * against the base slots (so the endpoint gets another), up to this many in flight in all.
   */
  maxPerEndpoint?: number;
  slowMs?: number;
  /** The lease a claim gives (the claim time of an in-flight delivery is read back from it). */
  leaseMs?: number;
  /** Failures in a row after which an endpoint whose circuit just closed gets one probe at a time. */
  probeAfter?: number;
  /** This worker's own in-flight deliveries per endpoint (not committed as processing yet). */
  localInFlight?: ReadonlyMap<string, LocalInFlight>;
}

/**
 * A worker's requests in flight to one endpoint: all of them, those younger than slowMs, and
 * those answered whose attempts are not recorded yet (still processing in the table, but their
 * slots are free).
 */
export interface LocalInFlight {
  all: number;
  fast: number;
  answered?: number;
}

interface SlotRules {
  base: number;
  max: number;
  slowMs: number;
  leaseMs: number;
  probeAfter: number;
}

const rulesOf = (limits: number | ClaimLimits, leaseMs = 60_000): SlotRules => {
  const l = typeof limits === 'number' ? { perEndpoint: limits } : limits;
  return {
    base: l.perEndpoint,
    max: Math.max(l.perEndpoint, l.maxPerEndpoint ?? l.perEndpoint),
    slowMs: l.slowMs ?? leaseMs,
    leaseMs: l.leaseMs ?? leaseMs,
    probeAfter: l.probeAfter ?? 2_147_483_647,
  };
};

/** Free slots of an endpoint: base slots less its young requests, within the bound; one probe after its circuit. */
export function freeSlots(row: { base: number; probe: boolean }, max: number, busy: LocalInFlight): number {
  if (row.probe) return Math.max(0, 1 - busy.all);
  return Math.max(0, Math.min(row.base - busy.fast, max - busy.all));
}

/**
 * Due deliveries a claim may take: each endpoint with open deliveries is visited once (a skip scan
 * of the open index, one probe per endpoint), and only as many of its due deliveries as it has
 * free slots are read, so an endpoint's backlog is neither read nor crowds other endpoints out of
 * the claim. First attempts come before retries (a retry never holds up a new event), each
 * oldest first. Each row carries its endpoint's in-flight counts, its base slots (halved while it
 * refuses) and whether only a probe may go (its circuit has just closed).
 */
export function dueCandidates(limit: number, limits: number | ClaimLimits) {
  const r = rulesOf(limits);
  const youngAfter = (r.leaseMs - r.slowMs) / 1000;
  return sql<{ id: string; endpoint_id: string; due_at: Date; busy: number; fast: number; base: number; probe: boolean; first: boolean }>`
    with recursive open_endpoints as (
      (select endpoint_id from webhook_deliveries
        where status in ('pending', 'retrying', 'processing')
        order by endpoint_id limit 1)
      union all
      select (select d.endpoint_id from webhook_deliveries d
          where d.status in ('pending', 'retrying', 'processing') and d.endpoint_id > o.endpoint_id
          order by d.endpoint_id limit 1)
        from open_endpoints o where o.endpoint_id is not null),
    ready as (
      select e.id, b.busy, b.fast, least(coalesce(e.slot_limit, ${r.base}::int), ${r.base}::int) as base,
          (e.circuit_open_until is not null and e.consecutive_failures >= ${r.probeAfter}::int) as probe
        from open_endpoints o join webhook_endpoints e on e.id = o.endpoint_id
        cross join lateral (
          select count(*)::int as busy,
              count(*) filter (where p.next_attempt_at > now() + make_interval(secs => ${youngAfter}))::int as fast
            from webhook_deliveries p
            where p.endpoint_id = e.id and p.status = 'processing' and p.next_attempt_at > now()) b
        where e.status = 'enabled' and e.deleted_at is null
          and (e.circuit_open_until is null or e.circuit_open_until <= now())),
    -- At most an endpoint's base slots of each kind are read: the claimer decides how many it
    -- takes, counting its own requests that have ended but are not recorded yet as free.
    free as (
      select *, case when probe then 1 else base end as slots
        from ready)
    select d.id, d.endpoint_id, d.next_attempt_at as due_at, f.busy, f.fast, f.base, f.probe, d.first
    from free f
    cross join lateral (
      (select id, endpoint_id, next_attempt_at, true as first from webhook_deliveries
        where endpoint_id = f.id and status = 'pending' and next_attempt_at <= now()
        order by next_attempt_at limit f.slots)
      union all
      (select id, endpoint_id, next_attempt_at, false as first from webhook_deliveries
        where endpoint_id = f.id and status in ('retrying', 'processing') and next_attempt_at <= now()
        order by next_attempt_at limit f.slots)) d
    order by d.first desc, d.next_attempt_at
    limit ${limit * 4}`;
}

/** A claimed delivery with what sending it needs: URL, sealed secrets and the event's payload. */
export interface ClaimedDelivery extends DeliveryWork {
  /** When it was due: the schedule this attempt follows. */
  due_at: Date;
}

/**
 * Claims due deliveries of enabled endpoints whose circuit is closed, in two statements and no
 * transaction of its own: the first reads candidates (without locks) with each endpoint's
 * processing rows whose lease still runs, the second locks the picked rows (skipping rows other
 * workers hold, rechecking that each is still due), marks them processing under a lease token
 * with the lease expiry as next_attempt_at (a crashed worker's deliveries are taken again when it
 * runs out), and returns them with their endpoints' URLs and secrets and their events' payloads.
 * Each endpoint has `perEndpoint` slots (fewer while it refuses), and a request in flight longer
 * than `slowMs` frees its slot for another, up to `maxPerEndpoint` in flight; workers claiming the same endpoint at the
 * same instant can each take its free slots (an overshoot bounded by the number of workers
 * claiming at once). Concurrent claims never wait for each other.
 */
export async function claimDue(
  db: Queryable,
  limit: number,
  leaseMs: number,
  token: string,
  limits: ClaimLimits,
): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return [];
  const rules = rulesOf(limits, leaseMs);
  const { rows } = await dueCandidates(limit, { ...limits, leaseMs }).execute(db);
  if (rows.length === 0) return [];
  const inFlight = new Map<string, LocalInFlight>();
  for (const row of rows) inFlight.set(row.endpoint_id, { all: row.busy, fast: row.fast });
  for (const [id, n] of limits.localInFlight ?? []) {
    const seen = inFlight.get(id);
    const answered = n.answered ?? 0;
    if (seen) inFlight.set(id, { all: Math.max(seen.all - answered, n.all), fast: Math.max(seen.fast - answered, n.fast) });
  }
  const picked = new Map<string, Date>();
  for (const row of rows) {
    if (picked.size >= limit) break;
    const n = inFlight.get(row.endpoint_id)!;
    if (freeSlots(row, rules.max, n) <= 0) continue;
    inFlight.set(row.endpoint_id, { all: n.all + 1, fast: n.fast + 1 });
    picked.set(row.id, row.due_at);
  }
  if (picked.size === 0) return [];
  // Only the picked rows are locked (the candidates above were read without locks, so rows this
  // claim does not take stay free for other workers).
  const claimed = await sql<DeliveryWork>`
    with claimed as (
      update webhook_deliveries set status = 'processing', lease_token = ${token},
        next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
      where id in (
        select id from webhook_deliveries
        where id = any(${[...picked.keys()]}::uuid[])
          and status in ('pending', 'retrying', 'processing') and next_attempt_at <= now()
        for update skip locked)
      returning id, tenant_id, environment, event_id, endpoint_id, attempts, manual)
    select c.id, c.tenant_id, c.environment, c.event_id, c.endpoint_id, c.attempts, c.manual,
      e.url, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at,
      ${eventEnvelope('ev')} as payload, s.sequence::text as sequence
    from claimed c
    join webhook_endpoints e on e.id = c.endpoint_id
    join events ev on ev.id = c.event_id
    left join event_sequences s on s.event_id = c.event_id
    order by c.id`.execute(db);
  return claimed.rows.map((w) => ({ ...w, due_at: picked.get(w.id)! }));
}

/** The ids of claimed deliveries, with no per-endpoint limit beyond `limit` (tests, CLI). */
export async function claimDueDeliveries(trx: Queryable, limit: number, leaseMs: number, token: string, perEndpoint = limit) {
  return (await claimDue(trx, limit, leaseMs, token, { perEndpoint })).map((c) => c.id);
}

export interface CircuitRules {
  threshold: number;
  openMs: number;
  maxOpenMs: number;
  /**
   * The circuit opens only if the endpoint has not succeeded for this long: one that fails half
   * its requests has runs of failures now and then, and must not be paused for them.
   */
  windowMs?: number;
  /** The base slots a refusing endpoint's halved slot limit grows back to (one per success). */
  baseSlots?: number;
}

/**
 * An endpoint's circuit after a run of attempts, in the order they ended (true: a success). A
 * success closes it; a failure counts, and from `threshold` failures in a row, with no success
 * for `windowMs`, the circuit opens for `openMs` doubled per further failure, up to `maxOpenMs`.
 * While open, no delivery of the endpoint is claimed (none holds a worker); when it closes one
 * probe goes first. One statement for the whole run: the failures in a row after its last success
 * (all of them when none succeeded, added to the endpoint's count) decide it as they would one at
 * a time. `refused` attempts in the run (connection refused, 429, 503) halve the endpoint's slots;
 * successes give one back each, up to the base.
 */
export async function noteEndpointOutcomes(
  trx: Queryable,
  endpointId: string,
  outcomes: readonly boolean[],
  circuit: CircuitRules,
  refused = 0,
) {
  if (outcomes.length === 0) return;
  const lastSuccess = outcomes.lastIndexOf(true);
  const successes = outcomes.filter(Boolean).length;
  const failuresAfter = outcomes.length - 1 - lastSuccess;
  const base = circuit.baseSlots ?? 2_147_483_647;
  const slots =
    refused > 0
      ? sql`greatest(1, least(coalesce(slot_limit, ${base}::int), ${base}::int) / 2)`
      : sql`case when slot_limit is null or slot_limit + ${successes}::int >= ${base}::int then null else slot_limit + ${successes}::int end`;
  if (lastSuccess >= 0 && failuresAfter === 0 && refused === 0) {
    await sql`
      update webhook_endpoints set consecutive_failures = 0, circuit_open_until = null, last_success_at = now(), slot_limit = ${slots}
      where id = ${endpointId} and (consecutive_failures > 0 or circuit_open_until is not null or slot_limit is not null
        or last_success_at is null or last_success_at < now() - interval '1 second')`.execute(trx);
    return;
  }
  // Failures in a row: counted from zero after a success, else from the endpoint's count.
  const failures = lastSuccess >= 0 ? sql`${failuresAfter}::int` : sql`consecutive_failures + ${failuresAfter}::int`;
  const untilNow = lastSuccess >= 0 ? sql`null::timestamptz` : sql`circuit_open_until`;
  const quiet =
    lastSuccess >= 0
      ? sql`false`
      : sql`(last_success_at is null or last_success_at < now() - make_interval(secs => ${(circuit.windowMs ?? 0) / 1000 + 1}))`;
  await sql`
    update webhook_endpoints set consecutive_failures = ${failures}, slot_limit = ${slots},
      last_success_at = ${lastSuccess >= 0 ? sql`now()` : sql`last_success_at`},
      circuit_open_until = case when ${failures} >= ${circuit.threshold} and ${quiet}
        then now() + make_interval(secs => least(${circuit.maxOpenMs}::float8,
          ${circuit.openMs}::float8 * power(2, least(${failures} - ${circuit.threshold}, 30))) / 1000)
        else ${untilNow} end
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
  /** The event's number in its business and environment (none on test events). */
  sequence: string | null;
}

export interface DeliveryOutcome {
  status: 'sent' | 'retrying' | 'failed';
  nextAttemptAt: Date | null;
  statusCode: number | null;
}

export type NewAttempt = Insertable<WebhookAttemptsTable>;

/**
 * Records a batch's attempts and their deliveries' new states, in one statement. A state changes
 * only if this worker still holds the lease (else another worker took it over after the lease ran
 * out); the attempt is kept either way, since the request was made. Returns the deliveries still
 * held.
 */
export async function recordAttempts(
  trx: Queryable,
  token: string,
  items: { attempt: NewAttempt; outcome: DeliveryOutcome }[],
): Promise<Set<string>> {
  if (items.length === 0) return new Set();
  const now = new Date();
  const states = valuesOf(
    'o',
    { id: 'uuid', status: 'text', next_attempt_at: 'timestamptz', status_code: 'int' },
    items.map(({ attempt, outcome }) => [attempt.delivery_id, outcome.status, outcome.nextAttemptAt, outcome.statusCode]),
  );
  const { rows } = await sql<{ id: string }>`
    with attempts as (${trx.insertInto('webhook_attempts').values(items.map((i) => i.attempt))})
    update webhook_deliveries d set status = o.status, next_attempt_at = o.next_attempt_at, attempts = d.attempts + 1,
      manual = false, lease_token = null, last_attempt_at = ${now}, last_status_code = o.status_code, updated_at = ${now}
    from ${states}
    where d.id = o.id and d.lease_token = ${token} and d.status = 'processing'
    returning d.id`.execute(trx);
  return new Set(rows.map((r) => r.id));
}
