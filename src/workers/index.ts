import type { Job } from '../core/job.js';
import type { FastifyBaseLogger } from 'fastify';
import { webhookLoopbackAllowed, type Config } from '../config.js';
import type { Db, UnitOfWork } from '../db/client.js';
import { purgeExpiredSessions } from '../dashboard/service.js';
import { Idempotency } from '../http/idempotency.js';
import { RequestLogRetention } from '../modules/request-log/service.js';
import type { Sealer } from '../lib/crypto.js';
import { observeJobTick } from '../lib/metrics.js';
import { webhookJobs, type DeliveryOptions } from '../modules/webhooks/delivery.js';
import { limitOrderJob } from '../modules/fx/worker.js';
import { approvalExpiryJob } from './approvals.js';
import { verifyDuePayees } from '../modules/external-accounts/service.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts } from '../modules/transfers/payout-lifecycle.js';
import { expireDueCollections } from '../modules/collections/lifecycle.js';
import { expireDue } from '../modules/cards/payments.js';
import { bankExchangeJob } from './bank-files.js';
import { testClockJob } from './test-clocks.js';

export interface WorkerDeps {
  config: Config;
  db: Db;
  dbKind: 'pglite' | 'postgres';
  sealer: Sealer;
  log: FastifyBaseLogger;
}

/**
 * Runs each job in its own loop. A tick that reports more work runs again at once; an idle or
 * failed tick waits its interval. Jobs claim rows with FOR UPDATE SKIP LOCKED, so any number of
 * worker processes can run side by side.
 */
export function runJobs(jobs: Job[], log: FastifyBaseLogger, maxIntervalMs = Infinity) {
  let running = true;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();

  const loop = (job: Job) => {
    if (!running) return;
    const started = performance.now();
    const p = job
      .tick()
      .then(
        (more) => {
          observeJobTick(job.name, (performance.now() - started) / 1000, more ? 'more' : 'idle');
          return more;
        },
        (err: unknown) => {
          log.error({ err, job: job.name }, 'background job failed');
          observeJobTick(job.name, (performance.now() - started) / 1000, 'failed');
          return false;
        },
      )
      .then((more) => {
        inFlight.delete(p);
        if (!running) return;
        const timer = setTimeout(
          () => {
            timers.delete(timer);
            loop(job);
          },
          more ? 0 : Math.min(job.intervalMs, maxIntervalMs),
        );
        timers.add(timer);
      });
    inFlight.add(p);
  };
  for (const job of jobs) loop(job);

  return {
    async stop() {
      running = false;
      for (const t of timers) clearTimeout(t);
      await Promise.all(inFlight);
      await Promise.all(jobs.map((job) => job.stop?.()));
    },
  };
}

export interface WorkerOptions {
  /** Webhook retry schedule, timeout and batch sizes (tests make them fast). */
  webhooks?: Partial<DeliveryOptions>;
}

export function startWorkers(deps: WorkerDeps, options: WorkerOptions = {}) {
  const idempotency = new Idempotency(deps.db, deps.sealer, deps.config.IDEMPOTENCY_TTL_HOURS);
  const requestLogRetention = new RequestLogRetention(deps.db, deps.config.REQUEST_LOG_RETENTION_DAYS);
  // Each job tick is an entry point: it opens the transactions its job runs in (docs/architecture.md).
  const unitOfWork: UnitOfWork = (work) => deps.db.transaction().execute(work);
  const jobs: Job[] = [
    { name: 'idempotency-sweep', intervalMs: 60_000, tick: async () => (await idempotency.sweep()) > 0 },
    { name: 'dashboard-session-sweep', intervalMs: 600_000, tick: async () => (await purgeExpiredSessions(deps.db)) > 0 },
    {
      name: 'request-log-retention',
      intervalMs: 600_000,
      tick: () => requestLogRetention.tick(),
    },
    ...webhookJobs(
      { db: deps.db, sealer: deps.sealer, log: deps.log },
      {
        maxInFlight: deps.config.WEBHOOK_CONCURRENCY,
        perEndpoint: deps.config.WEBHOOK_ENDPOINT_CONCURRENCY,
        allowLoopback: webhookLoopbackAllowed(deps.config),
        maxPerEndpoint: deps.config.WEBHOOK_ENDPOINT_MAX_CONCURRENCY,
        timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
        ...options.webhooks,
      },
    ),
    limitOrderJob(deps.db, deps.config),
    approvalExpiryJob(deps.db, deps.config),
    testClockJob(deps),
    { name: 'payee-verification', intervalMs: 1000, tick: () => verifyDuePayees(deps.db, unitOfWork, deps.config) },
    { name: 'payout-dispatch', intervalMs: 1000, tick: () => dispatchPendingPayouts(deps.db, deps.config) },
    { name: 'rail-settlement', intervalMs: 1000, tick: () => settleDueSandboxPayouts(deps.db) },
    {
      name: 'collection-expiry',
      intervalMs: 10_000,
      // Links are not rendered by the job, so the base URL does not matter here.
      tick: () =>
        deps.db
          .transaction()
          .execute((trx) =>
            expireDueCollections(trx, { config: deps.config, sealer: deps.sealer, baseUrl: deps.config.PUBLIC_BASE_URL ?? '' }),
          ),
    },
    bankExchangeJob(deps.db, deps.config, deps.sealer, deps.log),
    {
      name: 'card-authorization-expiry',
      intervalMs: 60_000,
      tick: () => deps.db.transaction().execute((trx) => expireDue(trx, 100, deps.dbKind === 'postgres')),
    },
  ];
  return runJobs(jobs, deps.log, deps.config.JOB_INTERVAL_MAX_MS);
}
