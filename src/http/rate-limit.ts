import type { FastifyInstance } from 'fastify';
import type { Counters } from '../lib/counters.js';
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
  app.addHook('onRequest', async (request, reply) => {
    if (!request.ctx) return; // unauthenticated routes (docs, health) are not metered
    const now = Date.now();
    const window = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    const { tenantId, environment, settings } = request.ctx;
    const quota = typeof settings.rate_limit_per_minute === 'number' ? settings.rate_limit_per_minute : defaultPerMinute;
    const used = await counters.hit(`rl:${tenantId}:${environment}`, WINDOW_SECONDS * 1000, now);
    const reset = Math.max(1, window + WINDOW_SECONDS - Math.floor(now / 1000));
    reply.header('RateLimit-Policy', `"default";q=${quota};w=${WINDOW_SECONDS}`);
    reply.header('RateLimit', `"default";r=${Math.max(0, quota - used)};t=${reset}`);
    if (used > quota) {
      throw new AppError('rate_limited', `Rate limit of ${quota} requests per minute reached`, [], {
        'Retry-After': String(reset),
      });
    }
  });
}
