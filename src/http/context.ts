export type Environment = 'sandbox' | 'live';

/** Who is asking: set by auth on every /v1 request and passed to every service and repo. */
export interface RequestContext {
  tenantId: string;
  environment: Environment;
  keyKind: 'secret' | 'public';
  requestId: string;
  /** The business's settings (fees, limits, quotas), loaded with the key. */
  settings: Record<string, unknown>;
}

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
