import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import { isIP, type LookupFunction } from 'node:net';
import { Batcher } from '../../db/batcher.js';
import type { Db } from '../../db/client.js';
import type { Environment } from '../../core/context.js';
import type { Sealer } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { observeWebhookDelivery } from '../../lib/metrics.js';
import type { Job } from '../../core/job.js';
import * as queue from './queue-repo.js';
import { EndpointLoad, SlotSignal } from './pool-state.js';
import { disableEndpoint } from './repo.js';
import { postJson, type SendResult } from './sender.js';
import { sealContext } from './service.js';
import { signedHeaders } from './signing.js';
import { assertEndpointUrl, guardedLookup, isBlockedAddress, systemResolver, type Resolver } from './url-safety.js';

/**
 * Webhook delivery. Fan-out turns each new outbox event into one delivery per matching endpoint
 * of its business and environment. A delivery pool per process then keeps up to `maxInFlight`
 * requests going: whenever slots are free (and again the moment a request ends) it claims due
 * deliveries in a short transaction (FOR UPDATE SKIP LOCKED, marked processing under a lease, at
 * most `perEndpoint` in flight per endpoint across all workers, none of an endpoint whose circuit
 * is open), POSTs each with no transaction open (one held across network I/O would block PGlite's
 * only connection), and records each attempt as it ends: attempts that end while a record is
 * being written share the next one. There is no batch barrier: a hanging receiver holds one slot
 * of its own endpoint until its timeout, never anyone else's delivery, and a retry is claimed as
 * soon as it is due.
 */

/** The contract's retry schedule after a failed attempt (section 8). */
export const DEFAULT_RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000];

export interface DeliveryOptions {
  /** Wait after the 1st, 2nd, … failed attempt; when they run out the delivery fails. */
  retryDelaysMs: number[];
  /** ± this fraction of each delay, so many failed deliveries do not retry in lockstep. */
  jitter: number;
  /** A receiver's Retry-After is honoured up to this. */
  maxRetryAfterMs: number;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Deliveries one `deliveryTick` (tests, CLI) claims and sends together. */
  deliveryBatch: number;
  fanoutBatch: number;
  /** Requests in flight per process (the pool's slots). */
  maxInFlight: number;
  /** Requests in flight per endpoint, across all workers (its base slots). */
  perEndpoint: number;
  /**
   * The bound on requests in flight per endpoint while some hang: a request in flight longer
   * than `slowMs` frees its base slot for the next delivery, up to this many in all.
   */
  maxPerEndpoint: number;
  slowMs: number;
  /** How often the pool looks for due work when it found none. */
  pollMs: number;
  /** Failed attempts in a row that open an endpoint's circuit. */
  circuitThreshold: number;
  /** How long a circuit stays open (doubling per further failure, up to circuitMaxOpenMs). */
  circuitOpenMs: number;
  circuitMaxOpenMs: number;
  /** The circuit opens only for an endpoint that has not succeeded for this long. */
  circuitWindowMs: number;
  /** DNS for endpoints (every answer is screened before the socket connects). */
  resolver: Resolver;
  /** Sandbox endpoints may reach loopback (config `webhookLoopbackAllowed`; off unless set). */
  allowLoopback: boolean;
}

export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = {
  retryDelaysMs: DEFAULT_RETRY_DELAYS_MS,
  jitter: 0.1,
  maxRetryAfterMs: 86_400_000,
  timeoutMs: 15_000,
  maxResponseBytes: 4096,
  deliveryBatch: 20,
  fanoutBatch: 200,
  maxInFlight: 256,
  perEndpoint: 8,
  maxPerEndpoint: 64,
  slowMs: 1000,
  pollMs: 100,
  circuitThreshold: 10,
  circuitOpenMs: 30_000,
  circuitMaxOpenMs: 600_000,
  circuitWindowMs: 30_000,
  resolver: systemResolver,
  allowLoopback: false,
};

export interface DeliveryDeps {
  db: Db;
  sealer: Sealer;
  log?: FastifyBaseLogger;
}

const withDefaults = (options: Partial<DeliveryOptions>): DeliveryOptions => ({ ...DEFAULT_DELIVERY_OPTIONS, ...options });

/** Creates the deliveries of a batch of new events. Returns true when more events wait. */
export async function fanOutTick(db: Db, partial: Partial<DeliveryOptions> = {}): Promise<boolean> {
  const options = withDefaults(partial);
  return db.transaction().execute(async (trx) => {
    const { queued, events } = await queue.claimNewEvents(trx, options.fanoutBatch);
    if (queued.length === 0) return false;
    const scopes = [...new Map(events.map((e) => [`${e.tenant_id}:${e.environment}`, e])).values()];
    const endpoints = await queue.enabledEndpointsOf(trx, scopes);
    const rows = events.flatMap((event) =>
      endpoints
        .filter(
          (ep) =>
            ep.tenant_id === event.tenant_id &&
            ep.environment === event.environment &&
            ep.created_at <= event.created_at && // endpoints created after an event do not get it
            (ep.event_types === null || ep.event_types.includes(event.event_type)),
        )
        .map((ep) => ({
          id: newId(),
          tenant_id: event.tenant_id,
          environment: event.environment,
          event_id: event.id,
          endpoint_id: ep.id,
          event_type: event.event_type,
          transaction_id: event.transaction_id,
          status: 'pending' as const,
          next_attempt_at: sql<Date>`now()` as unknown as Date,
        })),
    );
    await queue.assignSequences(trx, events);
    await queue.insertDeliveries(trx, rows);
    await queue.markFannedOut(trx, queued);
    return queued.length === options.fanoutBatch;
  });
}

interface Outcome extends queue.DeliveryOutcome {
  disable: string | null;
}

/** What an attempt's result means for its delivery and endpoint. */
export function decide(attemptNumber: number, manual: boolean, result: SendResult, options: DeliveryOptions, now = Date.now()): Outcome {
  const code = result.statusCode;
  if (code !== null && code >= 200 && code < 300) return { status: 'sent', nextAttemptAt: null, statusCode: code, disable: null };
  if (code === 410) return { status: 'failed', nextAttemptAt: null, statusCode: code, disable: 'endpoint_gone' };
  // A manual resend is one extra attempt: no schedule, and its failure does not disable.
  if (manual) return { status: 'failed', nextAttemptAt: null, statusCode: code, disable: null };
  const delay = options.retryDelaysMs[attemptNumber - 1];
  if (delay === undefined) return { status: 'failed', nextAttemptAt: null, statusCode: code, disable: 'retries_exhausted' };
  const jittered = delay * (1 + options.jitter * (Math.random() * 2 - 1));
  const wait = Math.max(jittered, Math.min(result.retryAfterMs ?? 0, options.maxRetryAfterMs));
  return { status: 'retrying', nextAttemptAt: new Date(now + Math.round(wait)), statusCode: code, disable: null };
}

function secretsOf(work: queue.DeliveryWork, sealer: Sealer): string[] {
  const context = sealContext(work.endpoint_id);
  const secrets = [sealer.open(work.secret_sealed, context)];
  if (work.previous_secret_sealed && work.previous_secret_expires_at && work.previous_secret_expires_at > new Date()) {
    secrets.push(sealer.open(work.previous_secret_sealed, context));
  }
  return secrets;
}

/**
 * The URL is checked again (rules may have changed since registration) and every DNS answer is
 * screened at the moment of connecting. A target that is not public (loopback, where the sandbox
 * of a development server may send) keeps its answer's status only: its headers and body are
 * neither stored nor shown, so an endpoint cannot read out what listens there.
 */
async function send(
  work: queue.DeliveryWork,
  body: string,
  headers: Record<string, string>,
  options: DeliveryOptions,
  signal?: AbortSignal,
): Promise<SendResult> {
  const environment = work.environment as Environment;
  const rules = { allowLoopback: options.allowLoopback };
  let host: string;
  try {
    host = assertEndpointUrl(work.url, environment, rules).hostname.replace(/^\[|\]$/g, '');
  } catch (err) {
    return {
      statusCode: null,
      headers: null,
      excerpt: null,
      error: `refused: ${(err as Error).message}`,
      durationMs: 0,
      retryAfterMs: null,
    };
  }
  let notPublic = isIP(host) !== 0 && isBlockedAddress(host);
  const onResolved = (addresses: { address: string }[]) => {
    if (addresses.some((a) => isBlockedAddress(a.address))) notPublic = true;
  };
  const result = await postJson(work.url, body, headers, {
    timeoutMs: options.timeoutMs,
    maxResponseBytes: options.maxResponseBytes,
    lookup: guardedLookup(options.resolver, environment, rules, onResolved) as unknown as LookupFunction,
    ...(signal ? { signal } : {}),
  });
  return notPublic ? { ...result, headers: null, excerpt: null } : result;
}

interface Attempted {
  work: Claimed;
  attempt: queue.NewAttempt;
  outcome: Outcome;
  result: SendResult;
}

/** The receiver said it cannot take more now: it refused the connection, or answered 429 or 503. */
export function refusedBy(result: SendResult): boolean {
  if (result.statusCode === 429 || result.statusCode === 503) return true;
  return result.statusCode === null && /^(ECONNREFUSED|ECONNRESET)\b/.test(result.error ?? '');
}

type Claimed = queue.ClaimedDelivery;

/** Signs and sends one delivery; touches no database. */
async function attempt(deps: DeliveryDeps, options: DeliveryOptions, work: Claimed, signal?: AbortSignal): Promise<Attempted> {
  // The stored payload with the event's sequence number; the signature covers exactly these bytes.
  const body = JSON.stringify(work.sequence === null ? work.payload : { ...work.payload, sequence: Number(work.sequence) });
  // webhook-id is the event id: the same on every retry, so receivers can deduplicate.
  const headers: Record<string, string> = {
    ...signedHeaders(secretsOf(work, deps.sealer), work.event_id, body),
    ...(work.sequence === null ? {} : { 'webhook-sequence': work.sequence }),
  };
  const startedAt = new Date();
  const result = await send(work, body, headers, options, signal);
  const attemptNumber = work.attempts + 1;
  const { 'webhook-signature': _signature, ...shownHeaders } = headers;
  deps.log?.info(
    { delivery_id: work.id, endpoint_id: work.endpoint_id, status_code: result.statusCode, error: result.error, ms: result.durationMs },
    'webhook attempt',
  );
  return {
    work,
    result,
    // The retry is scheduled from the moment this attempt ended.
    outcome: decide(attemptNumber, work.manual, result, options, startedAt.getTime() + result.durationMs),
    attempt: {
      id: newId(),
      tenant_id: work.tenant_id,
      environment: work.environment,
      delivery_id: work.id,
      endpoint_id: work.endpoint_id,
      event_id: work.event_id,
      attempt: attemptNumber,
      trigger: work.manual ? 'manual' : 'scheduled',
      url: work.url,
      request_headers: JSON.stringify(shownHeaders),
      status_code: result.statusCode,
      duration_ms: result.durationMs,
      response_headers: result.headers ? JSON.stringify(result.headers) : null,
      response_excerpt: result.excerpt,
      error: result.error,
      scheduled_at: work.due_at,
      started_at: startedAt,
    },
  };
}

/**
 * Records attempts, their deliveries' new states and their endpoints' circuits, in one short
 * transaction whatever their number: the attempts and states in one statement, then a statement
 * per endpoint whose circuit or status they change.
 */
async function record(deps: DeliveryDeps, options: DeliveryOptions, token: string, done: readonly Attempted[]): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    const held = await queue.recordAttempts(
      trx,
      token,
      done.map((d) => ({ attempt: d.attempt, outcome: d.outcome })),
    );
    const outcomes = new Map<string, boolean[]>();
    const refused = new Map<string, number>();
    const disable = new Map<string, string>();
    for (const d of done) {
      if (!held.has(d.work.id)) continue;
      observeWebhookDelivery(new Date(d.work.payload.timestamp), d.outcome.status === 'sent');
      if (d.outcome.disable && !disable.has(d.work.endpoint_id)) disable.set(d.work.endpoint_id, d.outcome.disable);
      // A manual resend's failure says nothing new about the endpoint; its success closes the circuit.
      const success = d.outcome.status === 'sent';
      if (success || !d.work.manual) outcomes.set(d.work.endpoint_id, [...(outcomes.get(d.work.endpoint_id) ?? []), success]);
      if (refusedBy(d.result)) refused.set(d.work.endpoint_id, (refused.get(d.work.endpoint_id) ?? 0) + 1);
    }
    // Endpoint rows in ascending id: two workers recording attempts of the same endpoints at
    // once lock them in the same order, so they wait for each other instead of deadlocking.
    for (const endpointId of [...new Set([...disable.keys(), ...outcomes.keys()])].sort()) {
      const reason = disable.get(endpointId);
      if (reason) await disableEndpoint(trx, endpointId, reason);
      const run = outcomes.get(endpointId);
      if (run) {
        await queue.noteEndpointOutcomes(
          trx,
          endpointId,
          run,
          {
            threshold: options.circuitThreshold,
            openMs: options.circuitOpenMs,
            maxOpenMs: options.circuitMaxOpenMs,
            windowMs: options.circuitWindowMs,
            baseSlots: options.perEndpoint,
          },
          refused.get(endpointId) ?? 0,
        );
      }
    }
  });
}

/**
 * Records attempts as they end, gathered: an attempt that ends while a record is being written
 * joins the next one (`db/batcher.ts`), so a busy pool writes one short transaction for many
 * attempts instead of one each. Should a gathered record fail, each attempt is recorded alone,
 * so one attempt's trouble keeps no other from being recorded.
 */
function attemptRecorder(deps: DeliveryDeps, options: DeliveryOptions, token: string) {
  const batcher = new Batcher<{ done: Attempted; settle: (err?: unknown) => void }>(
    async (batch) => {
      try {
        await record(
          deps,
          options,
          token,
          batch.map((b) => b.done),
        );
        for (const b of batch) b.settle();
      } catch {
        for (const b of batch) {
          await record(deps, options, token, [b.done]).then(
            () => b.settle(),
            (err: unknown) => b.settle(err),
          );
        }
      }
    },
    { maxBatch: 100, lanes: 1, name: 'webhook_attempts', fail: (batch, err) => batch.forEach((b) => b.settle(err)) },
  );
  return (done: Attempted) =>
    new Promise<void>((resolve, reject) => batcher.submit({ done, settle: (err) => (err === undefined ? resolve() : reject(err)) }));
}

/** Claims up to `limit` due deliveries with what sending them needs. */
function claim(
  deps: DeliveryDeps,
  options: DeliveryOptions,
  limit: number,
  token: string,
  perEndpoint: number,
  local?: Map<string, queue.LocalInFlight>,
): Promise<Claimed[]> {
  // The lease outlives the slowest attempt, so only a crashed worker's deliveries are retaken.
  const leaseMs = options.timeoutMs + 60_000;
  return deps.db.transaction().execute(async (trx) => {
    // A claim is only a lease: should PostgreSQL crash before its commit reaches the disk, the
    // deliveries are due again and sent again, as after a worker's crash (receivers deduplicate
    // on webhook-id). So its commit does not wait for the WAL flush (several ms on a real disk,
    // and every freed slot claims anew); the attempts are recorded durably.
    await sql`set local synchronous_commit = off`.execute(trx);
    return queue.claimDue(trx, limit, leaseMs, token, {
      perEndpoint,
      // Hanging requests of one endpoint never take more than half of this process's slots:
      // the other half stays for everyone else.
      maxPerEndpoint: Math.max(perEndpoint, Math.min(options.maxPerEndpoint, Math.floor(options.maxInFlight / 2))),
      slowMs: options.slowMs,
      probeAfter: options.circuitThreshold,
      ...(local ? { localInFlight: local } : {}),
    });
  });
}

/**
 * Claims and sends one batch of due deliveries and records each attempt as it ends (tests and
 * the CLI drive delivery with it; the workers run `deliveryPool`). Returns true when the batch
 * was full.
 */
export async function deliveryTick(deps: DeliveryDeps, partial: Partial<DeliveryOptions> = {}): Promise<boolean> {
  const options = withDefaults(partial);
  const token = newId();
  const work = await claim(deps, options, options.deliveryBatch, token, options.deliveryBatch);
  if (work.length === 0) return false;
  await Promise.all(
    work.map((w) =>
      attempt(deps, options, w)
        .then((done) => record(deps, options, token, [done]))
        // Only a broken stored secret gets here; that delivery is retaken when its lease ends.
        .catch((err: unknown) => deps.log?.error({ err, delivery_id: w.id }, 'webhook delivery could not be sent or recorded')),
    ),
  );
  return work.length === options.deliveryBatch;
}

/**
 * The continuous delivery pool: each tick claims as many due deliveries as there are free slots
 * and starts them without waiting; each request is recorded the moment it ends and frees its
 * slot. `stop` aborts the requests in flight and records them as failed attempts (retried on
 * the schedule by any worker); `stop(false)` waits for them instead (each is bounded by the timeout).
 */
export function deliveryPool(
  deps: DeliveryDeps,
  partial: Partial<DeliveryOptions> = {},
): Job & { stop: (abort?: boolean) => Promise<void> } {
  const options = withDefaults(partial);
  const token = newId();
  const recordSoon = attemptRecorder(deps, options, token);
  const inFlight = new Map<string, Promise<void>>();
  const load = new EndpointLoad();
  const controllers = new Map<string, AbortController>();
  let stopping = false;
  /** Requests ended so far, and the tick waiting for the next one to end. */
  const slot = new SlotSignal();

  const launch = (w: Claimed) => {
    const local = load.start(w);
    let answered = false;
    const controller = new AbortController();
    controllers.set(w.id, controller);
    const run = attempt(deps, options, w, controller.signal)
      .then((done) => {
        // A delivered request's slot is free for the next delivery now, not once it is recorded.
        // A failed one keeps it until recorded: the record may open the endpoint's circuit, and
        // no further request may go out before that is decided.
        if (done.outcome.status === 'sent') {
          load.answer(w, local);
          answered = true;
          slot.end();
        }
        // An attempt cut short by `stop` is recorded like any failed one: the receiver may already
        // have its body, so the history must show the attempt that a later retry duplicates.
        return recordSoon(done);
      })
      .catch((err: unknown) => deps.log?.error({ err, delivery_id: w.id }, 'webhook delivery could not be sent or recorded'))
      .finally(() => {
        inFlight.delete(w.id);
        controllers.delete(w.id);
        load.end(w, local, answered);
        slot.end();
      });
    inFlight.set(w.id, run);
  };

  return {
    name: 'webhook-delivery',
    intervalMs: options.pollMs,
    async tick() {
      if (stopping) return false;
      const before = slot.ended;
      const free = options.maxInFlight - inFlight.size;
      if (free > 0) {
        const work = await claim(deps, options, free, token, options.perEndpoint, load.snapshot(options.slowMs));
        for (const w of work) launch(w);
        // A full claim means more may be due right now.
        if (work.length === free && inFlight.size < options.maxInFlight) return true;
      }
      if (inFlight.size === 0) return false; // nothing due and nothing in flight: look again after pollMs
      // Requests are in flight. One that ends frees a slot, and its endpoint (held at perEndpoint)
      // may take its next delivery at once: claim again then, not after pollMs, or a busy
      // endpoint gets perEndpoint deliveries per pollMs (about 35/s) however fast it answers.
      if (slot.ended === before) await slot.freedOr(options.pollMs);
      return !stopping;
    },
    async stop(abort = true) {
      stopping = true;
      if (abort) for (const c of controllers.values()) c.abort();
      await Promise.all(inFlight.values());
    },
  };
}

/** One full worker tick for tests and the CLI: fan out every new event, then one delivery batch. */
export async function runWebhookTick(deps: DeliveryDeps, options: Partial<DeliveryOptions> = {}): Promise<boolean> {
  while (await fanOutTick(deps.db, options));
  return deliveryTick(deps, options);
}

/** The background jobs: the fan-out loop and the delivery pool. */
export function webhookJobs(deps: DeliveryDeps, partial: Partial<DeliveryOptions> = {}): Job[] {
  const options = withDefaults(partial);
  return [{ name: 'webhook-fanout', intervalMs: 200, tick: () => fanOutTick(deps.db, options) }, deliveryPool(deps, options)];
}
