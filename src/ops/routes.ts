import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { statusOf } from '../http/errors.js';
import { html, type Html } from '../dashboard/html.js';
import { alert } from '../dashboard/layout.js';
import { isSecureRequest, originAllowed, parseCookies, setSecurityHeaders, tokensEqual } from '../dashboard/security.js';
import { opsPublicPage } from './layout.js';
import * as service from './service.js';
import { kycRoutes } from './kyc-routes.js';
import { formOf, seeOther, sendPage } from './replies.js';
import { payoutRoutes } from './payout-routes.js';
import { businessRoutes } from './business-routes.js';
import { bankRoutes } from './bank-routes.js';
import { cookieNames, landing, loginRoutes } from './login-routes.js';
import { auditRoutes, operatorRoutes } from './operator-routes.js';
import type { BankDeps } from '../modules/bank-files/service.js';

const FORM_LIMIT = 64 * 1024;

/** The operator console at /ops, an encapsulated plugin like the dashboard. */
export function opsRoutes(deps: Deps, bank: BankDeps) {
  return async function plugin(app: FastifyInstance) {
    await app.register(opsConsole(deps, bank), { prefix: '/ops' });
  };
}

function opsConsole(deps: Deps, bank: BankDeps) {
  return async function inner(app: FastifyInstance) {
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) =>
      done(null, new URLSearchParams(body as string)),
    );
    app.decorateRequest('opsSession', null);
    registerGuards(app, deps);
    registerErrorPages(app);

    app.get('/', async (request, reply) => seeOther(reply, request.opsSession ? landing(request.opsSession) : '/ops/login'));
    await app.register(loginRoutes(deps));
    await app.register(operatorRoutes(deps));
    await app.register(auditRoutes(deps));
    await app.register(kycRoutes(deps));
    await app.register(payoutRoutes(deps));
    await app.register(businessRoutes(deps));
    await app.register(bankRoutes(deps, bank));
  };
}

/**
 * Every request: the dashboard's security headers, the operator's session from its own cookie
 * (a page without one goes to log in), and on every POST a same-site Origin and the right CSRF
 * token (the session's, or before log-in the double-submit cookie's).
 */
function registerGuards(app: FastifyInstance, deps: Deps) {
  const production = deps.config.PROFILE === 'production';
  app.addHook('onRequest', async (request, reply) => {
    setSecurityHeaders(reply);
    if (production && !isSecureRequest(request)) throw new AppError('https_required');
    const cookie = parseCookies(request.headers.cookie)[cookieNames(request).session];
    request.opsSession = cookie ? await service.sessionFor(deps.db, cookie) : null;
    if (!request.opsSession && !request.routeOptions.config?.opsPublic) {
      if (request.method === 'GET' || request.method === 'HEAD') return seeOther(reply, '/ops/login');
      throw new AppError('unauthorized');
    }
  });
  app.addHook('preHandler', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    if (!originAllowed(request)) throw new AppError('csrf_failed');
    const sent = formOf(request).get('_csrf') ?? undefined;
    const expected = request.opsSession ? request.opsSession.csrfToken : parseCookies(request.headers.cookie)[cookieNames(request).preauth];
    if (!tokensEqual(sent, expected)) {
      throw new AppError('csrf_failed');
    }
  });
}

function errorPage(title: string, message: string): Html {
  return opsPublicPage(title, html`${alert('error', message)}<p><a href="/ops/">Back to the console</a></p>`);
}

function registerErrorPages(app: FastifyInstance) {
  app.setErrorHandler((error: Error & { code?: string; statusCode?: number }, request, reply) => {
    if (error instanceof AppError) {
      const status = statusOf(error);
      const title =
        status === 403
          ? 'Forbidden'
          : status === 404
            ? 'Not found'
            : status === 401
              ? 'Log in first'
              : status === 409
                ? 'Conflict'
                : 'Request refused';
      return sendPage(reply, errorPage(title, error.message), status);
    }
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return sendPage(reply, errorPage('Unsupported form', 'Send forms as application/x-www-form-urlencoded.'), 415);
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendPage(reply, errorPage('Too large', 'The form is too large.'), 413);
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return sendPage(reply, errorPage('Bad request', 'The request could not be processed.'), 400);
    }
    request.log.error({ err: error }, 'ops console error');
    return sendPage(reply, errorPage('Something went wrong', 'Something went wrong on our side. Try again.'), 500);
  });
  app.setNotFoundHandler((_request, reply) => sendPage(reply, errorPage('Not found', 'There is no such page.'), 404));
}
