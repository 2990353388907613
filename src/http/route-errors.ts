import type { FastifyRequest } from 'fastify';
import type { ErrorCode } from '../core/errors.js';

declare module 'fastify' {
  interface FastifySchema {
    /**
     * The business error codes this route's handler and services can answer, besides the ones
     * every route can answer by construction (`routeErrorCodes`). Declared, the OpenAPI document
     * lists only these codes for the operation; in test runs an answer with an undeclared code is
     * logged and recorded (`undeclaredErrors`).
     */
    errors?: readonly ErrorCode[];
  }
}

interface RouteShape {
  method: string;
  url: string;
  hasBody: boolean;
  publicKeyAllowed?: boolean;
  noAuth?: boolean;
}

/**
 * Every code a /v1 route can answer by construction, whatever its service does: input checks
 * (400), auth (401/403), HTTPS in production (403), an id in the path (404), the unique-violation
 * fallback of writes (409), idempotency on POST, the body parser on every method but GET (400
 * invalid_json, 413, 415), the rate limit (429)
 * and the handler's last resorts (500, 503).
 */
export function constructionCodes(route: RouteShape): ErrorCode[] {
  const codes: ErrorCode[] = ['bad_request', 'validation_failed', 'https_required'];
  if (!route.noAuth) codes.push('missing_api_key', 'invalid_api_key', 'expired_api_key', 'tenant_mismatch', 'live_access_frozen');
  if (!route.noAuth && !route.publicKeyAllowed) codes.push('secret_key_required');
  if (route.url.includes(':') || route.url.includes('{')) codes.push('not_found');
  if (route.method !== 'GET') codes.push('conflict');
  if (route.method === 'POST') {
    codes.push('missing_idempotency_key', 'invalid_idempotency_key', 'idempotency_key_reused', 'idempotency_request_in_progress');
  }
  // Fastify parses a body sent to any method but GET, whether the route reads one or not.
  if (route.hasBody || route.method !== 'GET') codes.push('invalid_json', 'payload_too_large', 'unsupported_media_type');
  codes.push('rate_limited', 'internal_error', 'service_unavailable');
  return codes;
}

/** The codes a route can answer: by construction plus its declared ones. */
export function routeErrorCodes(route: RouteShape, declared: readonly ErrorCode[]): Set<ErrorCode> {
  return new Set([...constructionCodes(route), ...declared]);
}

/**
 * At registration: every documented /v1 route declares its codes (`errors: []` when it answers
 * only the construction codes), so the OpenAPI document lists exactly what each one can answer.
 * A route without them stops start-up, which fails every test run.
 */
export function assertDeclaresErrors(route: {
  method: string | string[];
  url: string;
  schema?: { hide?: boolean; errors?: unknown };
}): void {
  if (!route.url.startsWith('/v1/') || route.schema?.hide || route.schema?.errors) return;
  throw new Error(`${[route.method].flat().join(',')} ${route.url} declares no errors (src/http/route-errors.ts)`);
}

/** Answers seen in test runs whose code the route did not declare (see `checkDeclared`). */
export const undeclaredErrors: { method: string; url: string; code: string }[] = [];

const checking = process.env.NODE_ENV === 'test' || Boolean(process.env.VITEST);

/**
 * In test runs only: an error answer whose code the route does not declare is logged at error
 * level and recorded, so a test (or anyone reading the log) sees the omission. Never changes the
 * answer.
 */
export function checkDeclared(request: FastifyRequest, code: ErrorCode): void {
  if (!checking) return;
  const options = request.routeOptions;
  const url = options.url;
  if (!url?.startsWith('/v1/')) return;
  const method = [options.method].flat()[0] ?? request.method;
  const config = options.config;
  const codes = routeErrorCodes(
    { method, url, hasBody: Boolean(options.schema?.body), publicKeyAllowed: config?.publicKeyAllowed, noAuth: config?.noAuth },
    options.schema?.errors ?? [],
  );
  if (codes.has(code)) return;
  undeclaredErrors.push({ method, url, code });
  request.log.error({ route: `${method} ${url}`, code }, 'error code not declared for this route');
}
