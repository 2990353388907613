import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { LookupFunction } from 'node:net';
import type { Db } from '../../db/client.js';
import type { Environment } from '../../http/context.js';
import type { Sealer } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import type { Job } from '../../workers/index.js';
import * as queue from './queue-repo.js';
import { disableEndpoint } from './repo.js';
import { postJson, type SendResult } from './sender.js';
import { sealContext } from './service.js';
import { signedHeaders } from './signing.js';
import { assertEndpointUrl, guardedLookup, systemResolver, type Resolver } from './url-safety.js';

/**
 * Webhook delivery. Fan-out turns each new outbox event into one delivery per matching endpoint
 * of its business and environment. Delivery workers then claim due deliveries in a short
 * transaction (FOR UPDATE SKIP LOCKED, marked processing under a lease), POST them with no
 * transaction open (a transaction held across network I/O would block PGlite's only
 * connection), and record each attempt in another short transaction.
 */

/** The contract's retry schedule after a failed attempt (section 8). */
export const DEFAULT_RETRY_DELAYS_MS = [
  5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000, 72_000_000, 86_400_000,
];

export interface DeliveryOptions {
  /** Wait after the 1st, 2nd, … failed attempt; when they run out the delivery fails. */
  retryDelaysMs: number[];
  /** ± this fraction of each delay, so many failed deliveries do not retry in lockstep. */
  jitter: number;
  /** A receiver's Retry-After is honoured up to this. */
  maxRetryAfterMs: number;
  timeoutMs: number;
  maxResponseBytes: number;
  deliveryBatch: number;
  fanoutBatch: number;
  /** Parallel delivery loops per process. */
  deliveryLoops: number;
  /** DNS for endpoints (every answer is screened before the socket connects). */
  resolver: Resolver;
}

export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = {
  retryDelaysMs: DEFAULT_RETRY_DELAYS_MS,
  jitter: 0.1,
  maxRetryAfterMs: 86_400_000,
  timeoutMs: 15_000,
  maxResponseBytes: 4096,
  deliveryBatch: 20,
  fanoutBatch: 200,
  deliveryLoops: 2,
  resolver: systemResolver,
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
    const events = await queue.claimNewEvents(trx, options.fanoutBatch);
    if (events.length === 0) return false;
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
    await queue.insertDeliveries(trx, rows);
    await queue.markFannedOut(trx, events.map((e) => e.id));
    return events.length === options.fanoutBatch;
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
 * screened at the moment of connecting: live refuses private addresses, sandbox link-local ones.
 */
async function send(work: queue.DeliveryWork, body: string, headers: Record<string, string>, options: DeliveryOptions): Promise<SendResult> {
  const environment = work.environment as Environment;
  try {
    assertEndpointUrl(work.url, environment);
  } catch (err) {
    return { statusCode: null, headers: null, excerpt: null, error: `refused: ${(err as Error).message}`, durationMs: 0, retryAfterMs: null };
  }
  return postJson(work.url, body, headers, {
    timeoutMs: options.timeoutMs,
    maxResponseBytes: options.maxResponseBytes,
    lookup: guardedLookup(options.resolver, environment) as unknown as LookupFunction,
  });
}

interface Attempted {
  work: queue.DeliveryWork;
  attempt: queue.NewAttempt;
  outcome: Outcome;
}

/** Signs and sends one delivery; touches no database. */
async function attempt(deps: DeliveryDeps, options: DeliveryOptions, work: queue.DeliveryWork): Promise<Attempted> {
  // The stored payload as sent; the signature covers exactly these bytes.
  const body = JSON.stringify(work.payload);
  // webhook-id is the event id: the same on every retry, so receivers can deduplicate.
  const headers = signedHeaders(secretsOf(work, deps.sealer), work.event_id, body);
  const result = await send(work, body, headers, options);
  const attemptNumber = work.attempts + 1;
  const { 'webhook-signature': _signature, ...shownHeaders } = headers;
  deps.log?.info(
    { delivery_id: work.id, endpoint_id: work.endpoint_id, status_code: result.statusCode, error: result.error, ms: result.durationMs },
    'webhook attempt',
  );
  return {
    work,
    outcome: decide(attemptNumber, work.manual, result, options),
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
    },
  };
}

/**
 * Claims and sends one batch of due deliveries, then records the whole batch in one short
 * transaction (one commit per batch, not per attempt). Returns true when the batch was full.
 */
export async function deliveryTick(deps: DeliveryDeps, partial: Partial<DeliveryOptions> = {}): Promise<boolean> {
  const options = withDefaults(partial);
  const token = newId();
  // The lease outlives the slowest attempt, so only a crashed worker's deliveries are retaken.
  const leaseMs = options.timeoutMs + 60_000;
  const ids = await deps.db.transaction().execute((trx) => queue.claimDueDeliveries(trx, options.deliveryBatch, leaseMs, token));
  if (ids.length === 0) return false;
  const work = await queue.loadDeliveryWork(deps.db, ids);
  const settled = await Promise.allSettled(work.map((w) => attempt(deps, options, w)));
  const done: Attempted[] = [];
  for (const r of settled) {
    // Only a broken stored secret gets here; that delivery is retaken when its lease ends.
    if (r.status === 'rejected') deps.log?.error({ err: r.reason }, 'webhook delivery could not be signed');
    else done.push(r.value);
  }
  await deps.db.transaction().execute(async (trx) => {
    const held = await queue.recordAttempts(trx, token, done.map((d) => ({ attempt: d.attempt, outcome: d.outcome })));
    for (const d of done) {
      if (d.outcome.disable && held.has(d.work.id)) await disableEndpoint(trx, d.work.endpoint_id, d.outcome.disable);
    }
  });
  return ids.length === options.deliveryBatch;
}

/** One full worker tick for tests and the CLI: fan out every new event, then one delivery batch. */
export async function runWebhookTick(deps: DeliveryDeps, options: Partial<DeliveryOptions> = {}): Promise<boolean> {
  while (await fanOutTick(deps.db, options));
  return deliveryTick(deps, options);
}

/** The background jobs: one fan-out loop and `deliveryLoops` delivery loops. */
export function webhookJobs(deps: DeliveryDeps, partial: Partial<DeliveryOptions> = {}): Job[] {
  const options = withDefaults(partial);
  const jobs: Job[] = [{ name: 'webhook-fanout', intervalMs: 500, tick: () => fanOutTick(deps.db, options) }];
  for (let i = 1; i <= options.deliveryLoops; i++) {
    jobs.push({ name: `webhook-delivery-${i}`, intervalMs: 1000, tick: () => deliveryTick(deps, options) });
  }
  return jobs;
}
