import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import { AppError } from '../core/errors.js';
import { mustChoose } from './errors.js';
import { statusOf } from '../http/errors.js';
import { getTenant, ROTATION_EXPIRY_SECONDS } from '../modules/tenants/service.js';
import { approvalRoutes } from './approval-routes.js';
import { dataRoutes } from './data-routes.js';
import { alert } from './layout.js';
import { businessPage, errorPage, keysPage, loginPage, signupPage, type FormState } from './pages.js';
import {
  addCookie,
  cookieNames,
  FailureLimiter,
  isSecureRequest,
  originAllowed,
  parseCookies,
  setSecurityHeaders,
  tokensEqual,
} from './security.js';
import type { Counters } from '../lib/counters.js';
import { DashboardService, EmailTaken, LoginForm, SESSION_HOURS, SignupForm } from './service.js';
import { formOf, originOf, preauthToken, seeOther, sendPage, sessionCookie, sessionOf } from './replies.js';
import { customerRoutes } from './customer-routes.js';
import { detailRoutes } from './detail-routes.js';
import { eventRoutes } from './event-routes.js';
import { requestLogRoutes } from './request-routes.js';
import { requirePermission } from './roles.js';
import { settingsRoutes } from './settings-routes.js';
import { staticRoutes } from './static.js';
import { teamMailer } from './team-mail.js';
import { teamRoutes } from './team-routes.js';
import { TeamService } from './team-service.js';
import { webhookRoutes } from './webhook-routes.js';
import { overviewRoutes } from './overview-routes.js';
import { moneyRoutes } from './money-routes.js';
import { searchRoutes } from './search-routes.js';

const FORM_LIMIT = 64 * 1024;
/** Failed logins: 5 per email and 20 per client address in 15 minutes, then 429. */
const LOGIN_WINDOW_MS = 15 * 60_000;

/**
 * The web dashboard at /dashboard, as its own encapsulated plugin: it adds the form parser,
 * session loading, CSRF checks and HTML error pages only to its own routes.
 */
export function dashboardRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    await app.register(dashboard(deps), { prefix: '/dashboard' });
  };
}

function dashboard(deps: Deps) {
  return async function inner(app: FastifyInstance) {
    const service = new DashboardService(deps.db, deps.sealer, deps.inTransaction);
    const team = new TeamService(deps.db, deps.inTransaction, {
      mailer: teamMailer(deps.config),
      publicBaseUrl: deps.config.PUBLIC_BASE_URL,
    });
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true }; // not part of the API's OpenAPI document
    });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) =>
      done(null, new URLSearchParams(body as string)),
    );
    app.decorateRequest('dashboardSession', null);
    registerGuards(app, service, deps.config.PROFILE === 'production');
    registerErrorPages(app);

    app.get('/', async (request, reply) => seeOther(reply, request.dashboardSession ? '/dashboard/overview' : '/dashboard/login'));
    await app.register(staticRoutes);
    await app.register(loginRoutes(service, team, deps.counters));
    await app.register(signupRoutes(service, deps.counters));
    await app.register(businessRoutes(deps, service, team));
    await app.register(overviewRoutes(deps));
    await app.register(dataRoutes(deps));
    await app.register(customerRoutes(deps));
    await app.register(detailRoutes(deps));
    await app.register(moneyRoutes(deps));
    await app.register(searchRoutes(deps));
    await app.register(webhookRoutes(deps, service, team));
    await app.register(eventRoutes(deps));
    await app.register(requestLogRoutes(deps));
    await app.register(settingsRoutes(deps, team));
    await app.register(teamRoutes(service, team, deps.counters));
    await app.register(approvalRoutes(deps));
  };
}

const open = { config: { dashboardPublic: true } };

/** Log in (failures limited per email and per client address) and log out. */
function loginRoutes(service: DashboardService, team: TeamService, counters: Counters) {
  return async function plugin(app: FastifyInstance) {
    const limits = {
      email: new FailureLimiter(counters, 'login-email', 5, LOGIN_WINDOW_MS),
      ip: new FailureLimiter(counters, 'login-ip', 20, LOGIN_WINDOW_MS),
    };

    app.get('/login', open, async (request, reply) => {
      if (request.dashboardSession) return seeOther(reply, '/dashboard/overview');
      return sendPage(reply, loginPage(preauthToken(request, reply)));
    });

    app.post('/login', open, async (request, reply) => {
      const form = formOf(request);
      const parsed = LoginForm.safeParse({ email: form.get('email') ?? '', password: form.get('password') ?? '' });
      const email = parsed.success ? parsed.data.email : '';
      // The email's limit is per client address too: someone else's wrong guesses never lock the
      // owner of a known email out; the address's own limit still bounds a spray over emails.
      const keys = [`email:${email}:ip:${request.ip}`, `ip:${request.ip}`];
      const wait = Math.max(await limits.email.blockedFor(keys[0]!), await limits.ip.blockedFor(keys[1]!));
      const csrf = preauthToken(request, reply);
      if (wait > 0) {
        reply.header('Retry-After', String(wait));
        const message = alert('error', `Too many failed attempts. Try again in ${Math.ceil(wait / 60)} minutes.`);
        return sendPage(reply, loginPage(csrf, { values: { email }, errors: {} }, message), 429);
      }
      const result = parsed.success ? await service.login(email, parsed.data.password) : null;
      if (!result) {
        await limits.email.fail(keys[0]!);
        await limits.ip.fail(keys[1]!);
        const state: FormState = { values: { email }, errors: {} };
        return sendPage(reply, loginPage(csrf, state, alert('error', 'The email or password is not correct.')), 401);
      }
      await limits.email.reset(keys[0]!);
      await team.audit(result.session, 'login', result.session.email);
      addCookie(reply, sessionCookie(request, result.token, SESSION_HOURS * 3600));
      return seeOther(reply, '/dashboard/overview');
    });

    app.post('/logout', async (request, reply) => {
      await service.logout(sessionOf(request));
      addCookie(reply, sessionCookie(request, '', 0));
      return seeOther(reply, '/dashboard/login');
    });
  };
}

/** Sign up: the business, its two key pairs and the first login. */
function signupRoutes(service: DashboardService, counters: Counters) {
  return async function plugin(app: FastifyInstance) {
    // Each sign-up creates a business and costs a password hash: 30 per client address per hour.
    const signups = new FailureLimiter(counters, 'signup-ip', 30, 3_600_000);

    app.get('/signup', open, async (request, reply) => {
      if (request.dashboardSession) return seeOther(reply, '/dashboard/overview');
      return sendPage(reply, signupPage(preauthToken(request, reply)));
    });

    app.post('/signup', open, async (request, reply) => {
      const form = formOf(request);
      const values = {
        business_name: form.get('business_name') ?? '',
        email: form.get('email') ?? '',
        password: form.get('password') ?? '',
      };
      const parsed = SignupForm.safeParse(values);
      const csrf = preauthToken(request, reply);
      const wait = await signups.blockedFor(request.ip);
      if (wait > 0) {
        reply.header('Retry-After', String(wait));
        return sendPage(
          reply,
          signupPage(csrf, { values, errors: {} }, alert('error', 'Too many sign-ups from your network. Try again later.')),
          429,
        );
      }
      // Every attempt counts, a taken email included: it answers like any refusal.
      await signups.fail(request.ip);
      if (!parsed.success) {
        const errors: Record<string, string> = {};
        for (const issue of parsed.error.issues) errors[String(issue.path[0])] ??= issue.message;
        return sendPage(reply, signupPage(csrf, { values, errors }, alert('error', 'Please correct the fields below.')), 400);
      }
      try {
        const result = await service.signup(parsed.data);
        addCookie(reply, sessionCookie(request, result.token, SESSION_HOURS * 3600));
        return seeOther(reply, '/dashboard/keys');
      } catch (err) {
        if (!(err instanceof EmailTaken)) throw err;
        // Generic: the page does not confirm that someone has a login with this email.
        const message = 'We could not create an account with these details. If you already have one, log in or ask for a password reset.';
        return sendPage(reply, signupPage(csrf, { values, errors: {} }, alert('error', message)), 400);
      }
    });
  };
}

/** Environment switch, business page, API keys. */
function businessRoutes(deps: Deps, service: DashboardService, team: TeamService) {
  return async function plugin(app: FastifyInstance) {
    app.post('/environment', async (request, reply) => {
      const form = formOf(request);
      const env = form.get('environment');
      if (env !== 'sandbox' && env !== 'live') throw mustChoose('sandbox or live');
      await service.switchEnvironment(sessionOf(request), env);
      const back = form.get('back') ?? '';
      return seeOther(reply, `/dashboard/${/^[a-z]{1,20}$/.test(back) ? back : 'overview'}`);
    });

    app.get('/business', async (request, reply) => {
      const session = sessionOf(request);
      const tenant = await getTenant(deps.db, session.tenantId);
      return sendPage(reply, businessPage(session, tenant?.name ?? ''));
    });

    app.get('/keys', async (request, reply) => {
      const session = sessionOf(request);
      requirePermission(session.role, 'keys');
      const flash = await service.takeFlash(session);
      const notice = flash?.kind === 'keys' && flash.old_keys_expire_at ? alert('success', 'Keys rotated.') : undefined;
      return sendPage(reply, keysPage(session, await service.keys(session), flash, originOf(request), notice));
    });

    app.post('/keys/rotate', async (request, reply) => {
      const seconds = Number(formOf(request).get('expire_in_seconds'));
      if (!(ROTATION_EXPIRY_SECONDS as readonly number[]).includes(seconds)) {
        throw mustChoose('when the old keys expire: now, 1 hour, 24 hours or 7 days');
      }
      const session = sessionOf(request);
      requirePermission(session.role, 'keys');
      await service.rotate(session, seconds);
      await team.audit(session, 'keys.rotated', session.environment, `old keys expire in ${seconds} s`);
      return seeOther(reply, '/dashboard/keys');
    });
  };
}

/**
 * Every request: security headers and the session from its cookie. Pages need a session (else
 * a redirect to log in); every POST needs a same-site Origin and the right CSRF token: the
 * session's synchronizer token, or before log-in the double-submit cookie's value.
 */
function registerGuards(app: FastifyInstance, service: DashboardService, production: boolean) {
  app.addHook('onRequest', async (request, reply) => {
    setSecurityHeaders(reply);
    // Production: passwords and session cookies never travel over plain HTTP.
    if (production && !isSecureRequest(request)) throw new AppError('https_required');
    const names = cookieNames(isSecureRequest(request));
    const token = parseCookies(request.headers.cookie)[names.session];
    request.dashboardSession = token ? await service.sessionFor(token) : null;
    if (!request.dashboardSession && !request.routeOptions.config?.dashboardPublic) {
      return seeOther(reply, '/dashboard/login');
    }
  });
  app.addHook('preHandler', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    if (!originAllowed(request)) throw new AppError('csrf_failed');
    const sent = formOf(request).get('_csrf') ?? undefined;
    const expected = request.dashboardSession
      ? request.dashboardSession.csrfToken
      : parseCookies(request.headers.cookie)[cookieNames(isSecureRequest(request)).preauth];
    if (!tokensEqual(sent, expected)) {
      throw new AppError('csrf_failed');
    }
  });
}

/** Errors inside the dashboard are HTML pages, never the API's JSON envelope. */
function registerErrorPages(app: FastifyInstance) {
  app.setErrorHandler((error: Error & { code?: string; statusCode?: number }, request, reply) => {
    if (error instanceof AppError) return sendPage(reply, errorPage(titleOf(statusOf(error)), error.message), statusOf(error));
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return sendPage(reply, errorPage('Unsupported form', 'Send forms as application/x-www-form-urlencoded.'), 415);
    }
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendPage(reply, errorPage('Too large', 'The form is too large.'), 413);
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return sendPage(reply, errorPage('Bad request', 'The request could not be processed.'), 400);
    }
    request.log.error({ err: error }, 'dashboard error');
    return sendPage(reply, errorPage('Something went wrong', 'Something went wrong on our side. Try again.'), 500);
  });
  app.setNotFoundHandler((_request, reply) => sendPage(reply, errorPage('Not found', 'There is no such page.'), 404));
}

function titleOf(status: number): string {
  return status === 403 ? 'Forbidden' : status === 404 ? 'Not found' : status === 401 ? 'Log in first' : 'Request refused';
}
