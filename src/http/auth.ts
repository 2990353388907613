import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { KeyLookup } from '../core/context.js';
import { AppError } from '../core/errors.js';
import type { ChangeFeed } from '../db/change-feed.js';
import { sha256Hex } from '../lib/crypto.js';
import { isApiRequest } from './context.js';

/** With a live change feed an entry lives until a notification drops it (bounded for safety). */
const LISTENED_TTL_MS = 60_000;
/** Without one (reconnecting, or none given): short enough that a change lands within a second. */
const UNLISTENED_TTL_MS = 500;
const CACHE_MAX = 10_000;
export const AUTH_CHANNEL = 'fsapi_auth';

/**
 * Caches key lookups by the key's hash (never the key). Triggers on api_keys and tenants
 * (migration 0900) NOTIFY every process when a key or a business's settings change, and the
 * entry goes at once, so a rotated or revoked key stops working in every process within the
 * notification's delay (milliseconds). While the listener is down an entry lives half a second,
 * and the cache empties whenever the listener drops or (re)connects. Expiry is checked on every request.
 */
export class KeyCache {
  private readonly entries = new Map<string, { at: number; result: KeyLookup }>();
  /** Bumped by every invalidation: a lookup that raced one is not cached. */
  private generation = 0;

  constructor(
    private readonly lookupKey: (key: string) => Promise<KeyLookup>,
    private readonly changes?: ChangeFeed,
  ) {
    changes?.subscribe(
      AUTH_CHANNEL,
      (payload) => this.invalidate(payload),
      () => this.clear(),
    );
  }

  private ttl(): number {
    return this.changes?.live ? LISTENED_TTL_MS : UNLISTENED_TTL_MS;
  }

  invalidate(payload: string): void {
    this.generation++;
    if (payload.startsWith('key:')) {
      this.entries.delete(payload.slice(4));
    } else if (payload.startsWith('tenant:')) {
      const tenantId = payload.slice(7);
      for (const [id, e] of this.entries) if (e.result.ok && e.result.tenantId === tenantId) this.entries.delete(id);
    } else {
      this.entries.clear();
    }
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }

  /** The cached lookup of `key` while its entry lives (an expired key's answer as `resolve` gives it), else undefined. */
  cached(key: string): KeyLookup | undefined {
    const hit = this.entries.get(sha256Hex(key));
    const now = Date.now();
    if (!hit || now - hit.at >= this.ttl()) return undefined;
    const { result } = hit;
    if (result.ok && result.expiresAt && result.expiresAt.getTime() <= now) return { ok: false, reason: 'expired' };
    return result;
  }

  async resolve(key: string): Promise<KeyLookup> {
    const id = sha256Hex(key);
    const now = Date.now();
    const hit = this.entries.get(id);
    if (hit && now - hit.at < this.ttl()) {
      const { result } = hit;
      if (result.ok && result.expiresAt && result.expiresAt.getTime() <= now) return { ok: false, reason: 'expired' };
      return result;
    }
    const generation = this.generation;
    const result = await this.lookupKey(key);
    if (this.ttl() > 0 && generation === this.generation) {
      if (this.entries.size >= CACHE_MAX) this.entries.clear();
      this.entries.set(id, { at: now, result });
    }
    return result;
  }
}

/** The request's business from its key's lookup, or the error that refuses it. */
function admit(request: FastifyRequest, found: KeyLookup): AppError | undefined {
  if (!found.ok) return new AppError(found.reason === 'expired' ? 'expired_api_key' : 'invalid_api_key');
  if (found.liveFrozen) return new AppError('live_access_frozen');
  const tenantHeader = request.headers['x-tenant-id'];
  if (tenantHeader !== undefined && tenantHeader !== found.tenantId) return new AppError('tenant_mismatch');
  if (found.kind === 'public' && !request.routeOptions.config?.publicKeyAllowed) return new AppError('secret_key_required');
  request.ctx = {
    tenantId: found.tenantId,
    environment: found.environment,
    keyKind: found.kind,
    requestId: request.id,
    settings: found.settings,
  };
  return undefined;
}

/** Api-Key authentication for every /v1 route. The key alone decides business and environment. */
export function registerAuth(app: FastifyInstance, lookupKey: (key: string) => Promise<KeyLookup>, changes?: ChangeFeed): KeyCache {
  const cache = new KeyCache(lookupKey, changes);

  app.decorateRequest('ctx', null as unknown as FastifyRequest['ctx']);
  // Callback hooks, not async ones: a key in the cache (nearly every request) is checked without
  // a promise and a turn of the microtask queue; only a lookup waits for the database.
  app.addHook('onRequest', (request, _reply, done) => {
    if (!isApiRequest(request) || request.routeOptions.config?.noAuth) return done();
    const header = request.headers['api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (!key) return done(new AppError('missing_api_key'));
    const cached = cache.cached(key.trim());
    if (cached !== undefined) return done(admit(request, cached));
    cache.resolve(key.trim()).then((found) => done(admit(request, found)), done);
  });
  // Fails closed: a /v1 handler never runs without the business its key named, whatever let the
  // request past the check above.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.ctx || !isApiRequest(request) || request.routeOptions.config?.noAuth) return done();
    done(new AppError('missing_api_key'));
  });
  return cache;
}
