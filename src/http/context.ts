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
