import type { FastifyInstance } from 'fastify';
import { AppError } from './errors.js';

const WINDOW_SECONDS = 60;

/**
 * Fixed one-minute window per business and environment, in this process's memory (several API
 * processes each enforce the quota, so the effective limit scales with them; a shared store can
 * replace the map without touching callers). The quota is the business's `rate_limit_per_minute`
 * setting or the configured default. Headers follow the IETF RateLimit fields draft.
 */
export function registerRateLimit(app: FastifyInstance, defaultPerMinute: number): void {
  let windowStart = 0;
  let counts = new Map<string, number>();

  app.addHook('onRequest', async (request, reply) => {
    if (!request.ctx) return; // unauthenticated routes (docs, health) are not metered
    const now = Date.now();
    const window = Math.floor(now / 1000 / WINDOW_SECONDS) * WINDOW_SECONDS;
    if (window !== windowStart) {
      windowStart = window;
      counts = new Map();
    }
    const { tenantId, environment, settings } = request.ctx;
    const quota = typeof settings.rate_limit_per_minute === 'number' ? settings.rate_limit_per_minute : defaultPerMinute;
    const id = `${tenantId}:${environment}`;
    const used = (counts.get(id) ?? 0) + 1;
    counts.set(id, used);
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
