import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { AppError } from '../core/errors.js';
import { isApiRequest } from './context.js';
import { registerInputScreen } from './input.js';

export const BODY_LIMIT = 1024 * 1024;
const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/** A client's X-Request-Id is echoed when it is sane; otherwise we make one. */
export function requestIdFrom(request: { headers: Record<string, string | string[] | undefined> }, fallback: () => string) {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID_RE.test(sent) ? sent : fallback();
}

function isTls(request: FastifyRequest): boolean {
  return (request.raw.socket as { encrypted?: boolean }).encrypted === true;
}

/**
 * Body parsing (JSON only, numbers kept exact, screened by input.ts), request ids, HSTS on TLS, and the production
 * profile's HTTPS rule: plain HTTP is refused unless a trusted proxy says the client used HTTPS.
 */
export function registerTransport(app: FastifyInstance, config: Config): void {
  app.removeAllContentTypeParsers();
  registerInputScreen(app);

  const trusted = new Set(config.TRUSTED_PROXIES);
  // A callback hook, not an async one: no promise and no turn of the microtask queue per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    if (isTls(request)) {
      reply.header('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
      return done();
    }
    if (config.PROFILE !== 'production' || !isApiRequest(request)) return done();
    const viaTrustedProxy = trusted.has(request.socket.remoteAddress ?? '') && request.headers['x-forwarded-proto'] === 'https';
    done(viaTrustedProxy ? undefined : new AppError('https_required'));
  });
}
