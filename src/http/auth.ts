import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Db } from '../db/client.js';
import { sha256Hex } from '../lib/crypto.js';
import { lookupKey, type KeyLookup } from '../modules/tenants/service.js';
import { AppError } from './errors.js';

const CACHE_TTL_MS = 2_000;
const CACHE_MAX = 10_000;

/**
 * Api-Key authentication for every /v1 route. The key alone decides business and environment.
 * Lookups are cached for two seconds (by the key's hash, never the key) so a hot client costs
 * one query per key per two seconds; expiry is still checked on every request.
 */
export function registerAuth(app: FastifyInstance, db: Db): void {
  const cache = new Map<string, { at: number; result: KeyLookup }>();

  async function resolve(key: string): Promise<KeyLookup> {
    const id = sha256Hex(key);
    const now = Date.now();
    const hit = cache.get(id);
    if (hit && now - hit.at < CACHE_TTL_MS) {
      const { result } = hit;
      if (result.ok && result.expiresAt && result.expiresAt.getTime() <= now) return { ok: false, reason: 'expired' };
      return result;
    }
    const result = await lookupKey(db, key);
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(id, { at: now, result });
    return result;
  }

  app.decorateRequest('ctx', null as unknown as FastifyRequest['ctx']);
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/v1/') || request.routeOptions.config?.noAuth) return;
    const header = request.headers['api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (!key) throw new AppError('missing_api_key', 'Send your API key in the Api-Key header');
    const found = await resolve(key.trim());
    if (!found.ok) {
      if (found.reason === 'expired') throw new AppError('expired_api_key', 'This API key has expired');
      throw new AppError('invalid_api_key', 'The API key is not valid');
    }
    const tenantHeader = request.headers['x-tenant-id'];
    if (tenantHeader !== undefined && tenantHeader !== found.tenantId) {
      throw new AppError('tenant_mismatch', 'x-tenant-id does not match the business of the API key');
    }
    if (found.kind === 'public' && !request.routeOptions.config?.publicKeyAllowed) {
      throw new AppError('secret_key_required', 'This operation needs a secret key (sk_…); public keys only read reference data');
    }
    request.ctx = {
      tenantId: found.tenantId,
      environment: found.environment,
      keyKind: found.kind,
      requestId: request.id,
      settings: found.settings,
    };
  });
}

