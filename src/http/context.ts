import type { FastifyRequest } from 'fastify';
import type { RequestContext } from '../core/context.js';

declare module 'fastify' {
  interface FastifyRequest {
    ctx: RequestContext;
  }
  interface FastifyContextConfig {
    /** Read-only reference data that a public key may read. */
    publicKeyAllowed?: boolean;
    /** No Api-Key needed (documentation). */
    noAuth?: boolean;
    /** What the access log shows instead of this route's URL, which holds a secret (a link's token). */
    logUrl?: string;
  }
}

/**
 * Whether a request is for the API (/v1), decided by the route the router matched (its pattern),
 * never by the raw URL: the router decodes and normalises the path (`/%761/…` matches
 * `/v1/…`), so a prefix test on the raw URL lets such a spelling skip what /v1 requires. A
 * request that matched no route counts by its path, so an unknown /v1 path still asks for a key
 * before it answers 404.
 */
export function isApiRequest(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  return (route ?? request.url).startsWith('/v1/');
}
