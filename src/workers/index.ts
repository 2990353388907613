import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import { Idempotency } from '../http/idempotency.js';
import type { Sealer } from '../lib/crypto.js';
import { expireDue } from '../modules/cards/payments.js';

export interface WorkerDeps {
  config: Config;
  db: Db;
  dbKind: 'pglite' | 'postgres';
  sealer: Sealer;
  log: FastifyBaseLogger;
}

/** One background job: `tick` does a bounded batch of work and says whether more is waiting. */
export interface Job {
  name: string;
  intervalMs: number;
  tick: () => Promise<boolean>;
}

/**
 * Runs each job in its own loop. A tick that reports more work runs again at once; an idle or
 * failed tick waits its interval. Jobs claim rows with FOR UPDATE SKIP LOCKED, so any number of
 * worker processes can run side by side.
 */
export function runJobs(jobs: Job[], log: FastifyBaseLogger) {
  let running = true;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();

  const loop = (job: Job) => {
    if (!running) return;
    const p = job
      .tick()
      .then((more) => more, (err: unknown) => {
        log.error({ err, job: job.name }, 'background job failed');
        return false;
      })
      .then((more) => {
        inFlight.delete(p);
        if (!running) return;
        const timer = setTimeout(() => {
          timers.delete(timer);
          loop(job);
        }, more ? 0 : job.intervalMs);
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
    },
  };
}

export function startWorkers(deps: WorkerDeps) {
  const idempotency = new Idempotency(deps.db, deps.sealer, deps.config.IDEMPOTENCY_TTL_HOURS);
  const jobs: Job[] = [
    { name: 'idempotency-sweep', intervalMs: 60_000, tick: async () => (await idempotency.sweep()) > 0 },
    { name: 'card-authorization-expiry', intervalMs: 60_000, tick: () => expireDue(deps.db, 100, deps.dbKind === 'postgres') },
  ];
  return runJobs(jobs, deps.log);
}
