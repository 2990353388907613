import type { Config } from '../config.js';
import type { Db } from '../db/client.js';
import type { Sealer } from '../lib/crypto.js';
import type { Job } from '../core/job.js';
import type { Environment, Scope } from '../core/context.js';
import { clockTimeline, stampedAt, type Timeline } from '../core/clock.js';
import { expireDueCollections } from '../modules/collections/lifecycle.js';
import { expireDue } from '../modules/cards/payments.js';
import { settleWaitingOrders } from '../modules/fx/worker.js';
import { settleDueSandboxPayouts } from '../modules/transfers/payout-lifecycle.js';
import { resetDailySpending } from '../modules/transfers/limits.js';
import { bringRetriesForward } from '../modules/webhooks/repo.js';
import * as clocks from '../modules/test-clocks/service.js';
import { expireDueApprovals } from './approvals.js';

export interface ClockWorkerDeps {
  db: Db;
  dbKind: 'pglite' | 'postgres';
  config: Config;
  sealer: Sealer;
}

/** Steps one tick walks before it saves its place and lets the loop run again. */
const STEPS_PER_TICK = 50;
const DAY_MS = 86_400_000;
/** How long a worker holds a clock it walks; a crashed worker's clock is taken up again after it. */
const LEASE_SECONDS = 60;

/**
 * Fires what is due at the timeline's instant for its environment, through the same functions
 * the real-time jobs tick (workers/index.ts), each until it finds nothing more, with every event
 * stamped at the clock's time.
 */
async function firePass(d: ClockWorkerDeps, t: Timeline & { now: Date }): Promise<void> {
  const links = { config: d.config, sealer: d.sealer, baseUrl: d.config.PUBLIC_BASE_URL ?? '' };
  const skipLocked = d.dbKind === 'postgres';
  await stampedAt(t.now, async () => {
    while (await d.db.transaction().execute((trx) => expireDueCollections(trx, links, 50, t)));
    while (await d.db.transaction().execute((trx) => expireDue(trx, 100, skipLocked, t)));
    await settleWaitingOrders(d.db, d.config, t);
    while (await expireDueApprovals(d.db, d.config, 50, t));
    while (await settleDueSandboxPayouts(d.db, undefined, t));
  });
}

const ready = (at: Date) => ({ frozen_time: at, status: 'ready' as const, target_time: null, lease_until: null });

/**
 * Walks one advancing clock towards its target: from one instant where something falls due (or
 * a midnight UTC, where the daily limits reset) to the next, so everything fires in time order,
 * each at its own time; then to the target, where the clock turns `ready`. Saves the clock's time after each step: a reader sees it move, and a
 * worker that stops leaves the rest to the next one. True when it did any work.
 */
export async function advanceClocks(d: ClockWorkerDeps): Promise<boolean> {
  const clock = await clocks.leaseAdvancingClock(d.db, LEASE_SECONDS);
  if (!clock) return false;
  const scope: Scope = { tenantId: clock.tenant_id, environment: clock.environment as Environment };
  const target = clock.target_time!;
  let at = clock.frozen_time;
  if (!clock.attached) {
    // Nothing runs on it: its time moves and nothing of the business's (real time's) is touched.
    await d.db.transaction().execute((trx) => clocks.updateClock(trx, scope, clock.id, ready(target)));
    return true;
  }
  // What was already due at the clock's time (created due, or left by a stopped worker).
  await firePass(d, clockTimeline(scope, at));
  for (let step = 0; step < STEPS_PER_TICK; step++) {
    const due = await clocks.nextDueAfter(d.db, scope, at);
    const midnight = Math.floor(at.getTime() / DAY_MS) * DAY_MS + DAY_MS;
    const next = new Date(Math.min(due?.getTime() ?? Infinity, midnight, target.getTime()));
    if (next.getTime() >= midnight) await d.db.transaction().execute((trx) => resetDailySpending(trx, scope));
    await bringRetriesForward(d.db, scope, next.getTime() - at.getTime());
    at = next;
    const done = at.getTime() === target.getTime();
    // A stop at a midnight only resets; the jobs run where something falls due, and at the target
    // (limit orders whose rate was met since the last pass execute there at the latest).
    if (done || due?.getTime() === at.getTime()) await firePass(d, clockTimeline(scope, at));
    // The tick's last step lets the lease go, so the next tick (here or elsewhere) goes on at once.
    const lease = step === STEPS_PER_TICK - 1 ? null : new Date(Date.now() + LEASE_SECONDS * 1000);
    const saved = done ? ready(at) : { frozen_time: at, lease_until: lease };
    await d.db.transaction().execute((trx) => clocks.updateClock(trx, scope, clock.id, saved));
    if (done) break;
  }
  return true;
}

export function testClockJob(d: ClockWorkerDeps): Job {
  return { name: 'test-clocks', intervalMs: 1000, tick: () => advanceClocks(d) };
}
