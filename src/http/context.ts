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
  }
}
