import type { FastifyInstance, FastifyReply } from 'fastify';
import { MemoryCounters, type Counters } from '../lib/counters.js';
import { AppError } from '../core/errors.js';

const WINDOW_SECONDS = 60;

/**
 * Fixed one-minute window per business and environment. The counts live in `counters`: Redis
 * when REDIS_URL is set, so the quota holds across every API process (one round trip per
 * request); otherwise this process's memory, so each API process enforces the quota on its own.
 * The quota is the business's `rate_limit_per_minute` setting or the configured default.
 * Headers follow the IETF RateLimit fields draft.
 */
export function registerRateLimit(app: FastifyInstance, defaultPerMinute: number, counters: Counters): void {
  // In this process's memory a count needs no promise: the hook answers at once (a callback
  // hook, not an async one); Redis's counts are waited for.
  const memory = counters instanceof MemoryCounters ? counters : null;
  // The policy header changes only with the quota: its text is made again only when that does.
  let policy = { quota: NaN, text: '' };
  const apply = (reply: FastifyReply, quota: number, used: number, now: number): AppError | undefined => {
    const window = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    const reset = Math.max(1, window + WINDOW_SECONDS - Math.floor(now / 1000));
    if (policy.quota !== quota) policy = { quota, text: `"default";q=${quota};w=${WINDOW_SECONDS}` };
    reply.header('RateLimit-Policy', policy.text);
    reply.header('RateLimit', `"default";r=${Math.max(0, quota - used)};t=${reset}`);
    if (used > quota) {
      return new AppError('rate_limited', `Rate limit of ${quota} requests per minute reached`, [], {
        'Retry-After': String(reset),
      });
    }
    return undefined;
  };
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.ctx) return done(); // unauthenticated routes (docs, health) are not metered
    const now = Date.now();
    const { tenantId, environment, settings } = request.ctx;
    const quota = typeof settings.rate_limit_per_minute === 'number' ? settings.rate_limit_per_minute : defaultPerMinute;
    const key = `rl:${tenantId}:${environment}`;
    if (memory) return done(apply(reply, quota, memory.hitSync(key, WINDOW_SECONDS * 1000, now), now));
    counters.hit(key, WINDOW_SECONDS * 1000, now).then((used) => done(apply(reply, quota, used, now)), done);
  });
}
