import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { statusOf } from '../http/errors.js';
import { html, type Html } from '../dashboard/html.js';
import { alert, copyable, facts, table, when } from '../dashboard/layout.js';
import {
  addCookie,
  FailureLimiter,
  isSecureRequest,
  originAllowed,
  parseCookies,
  randomToken,
  serializeCookie,
  setSecurityHeaders,
  tokensEqual,
} from '../dashboard/security.js';
import { opsCsrf, opsPage, opsPublicPage } from './layout.js';
import * as repo from './repo.js';
import { OPS_ROLES, opsCan } from './roles.js';
import * as service from './service.js';
import type { OpsSession } from './service.js';
import { kycRoutes } from './kyc-routes.js';
import { allowed, formOf, opsSessionOf, seeOther, sendPage, uuidParam } from './replies.js';
import { payoutRoutes } from './payout-routes.js';
import { businessRoutes } from './business-routes.js';
import { bankRoutes } from './bank-routes.js';
import type { BankDeps } from '../modules/bank-files/service.js';

const FORM_LIMIT = 64 * 1024;
const LOGIN_WINDOW_MS = 15 * 60_000;

/**
 * Cookies of the console, apart from the dashboard's: a business user's dashboard cookie opens
 * nothing here, and an operator's cookie nothing there. `__Host-` and Secure over TLS.
 */
function names(request: FastifyRequest) {
  const prefix = isSecureRequest(request) ? '__Host-' : '';
  return { session: `${prefix}fso_session`, preauth: `${prefix}fso_csrf` };
}

function sessionCookie(request: FastifyRequest, value: string, maxAgeSeconds: number) {
  const secure = isSecureRequest(request);
  return serializeCookie(names(request).session, value, { secure, maxAgeSeconds, sameSite: 'Strict' });
}

function preauthToken(request: FastifyRequest, reply: FastifyReply): string {
  const secure = isSecureRequest(request);
  const name = names(request).preauth;
  const existing = parseCookies(request.headers.cookie)[name];
  if (existing && existing.length === 43) return existing;
  const t = randomToken();
  addCookie(reply, serializeCookie(name, t, { secure, maxAgeSeconds: 3600, sameSite: 'Strict' }));
  return t;
}

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

function landing(session: OpsSession): string {
  if (opsCan(session.role, 'kyc.decide')) return '/ops/kyc';
  if (opsCan(session.role, 'payouts.decide')) return '/ops/payouts';
  return '/ops/kyc';
}

const open = { config: { opsPublic: true } };

function loginPage(csrf: string, email = '', status?: Html): Html {
  return opsPublicPage(
    'Operator log in',
    html`<form method="post" action="/ops/login" class="stack">
  <input type="hidden" name="_csrf" value="${csrf}">
  <div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="username" required value="${email}"></div>
  <div class="field"><label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required></div>
  <div class="field"><label for="code">Authentication code</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" aria-describedby="code-hint">
  <small id="code-hint">The 6 digits from your authenticator app, once you have enrolled one.</small></div>
  <button type="submit">Log in</button>
</form>`,
    status,
  );
}

function setupPage(csrf: string, email: string, t: string, status?: Html): Html {
  return opsPublicPage(
    'Choose your password',
    html`<p>Operator account <strong>${email}</strong>. This link works once.</p>
<form method="post" action="/ops/setup/${t}" class="stack">
  <input type="hidden" name="_csrf" value="${csrf}">
  <div class="field"><label for="password">Password (at least 12 characters)</label><input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required></div>
  <button type="submit">Set password and log in</button>
</form>`,
    status,
  );
}

/** Log in (limited per email and per client address), the one-time setup link, log out, the profile's second factor. */
function loginRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    const limits = {
      email: new FailureLimiter(deps.counters, 'ops-login-email', 5, LOGIN_WINDOW_MS),
      ip: new FailureLimiter(deps.counters, 'ops-login-ip', 20, LOGIN_WINDOW_MS),
    };

    app.get('/login', open, async (request, reply) => {
      if (request.opsSession) return seeOther(reply, landing(request.opsSession));
      return sendPage(reply, loginPage(preauthToken(request, reply)));
    });

    app.post('/login', open, async (request, reply) => {
      const form = formOf(request);
      const email = service.EmailField.safeParse(form.get('email') ?? '').data ?? '';
      const keys = [`email:${email}`, `ip:${request.ip}`] as const;
      const wait = Math.max(await limits.email.blockedFor(keys[0]), await limits.ip.blockedFor(keys[1]));
      const csrf = preauthToken(request, reply);
      if (wait > 0) {
        reply.header('Retry-After', String(wait));
        return sendPage(
          reply,
          loginPage(csrf, email, alert('error', `Too many failed attempts. Try again in ${Math.ceil(wait / 60)} minutes.`)),
          429,
        );
      }
      const password = (form.get('password') ?? '').slice(0, 200);
      const result = email ? await service.login(deps.db, deps.sealer, email, password, form.get('code') ?? '') : null;
      if (!result?.ok) {
        await limits.email.fail(keys[0]);
        await limits.ip.fail(keys[1]);
        const message =
          result?.reason === 'code'
            ? 'The authentication code is not correct (or was already used).'
            : 'The email or password is not correct.';
        return sendPage(reply, loginPage(csrf, email, alert('error', message)), 401);
      }
      await limits.email.reset(keys[0]);
      const t = await deps.inTransaction(async (trx) => {
        await service.audit(
          trx,
          { operatorId: result.operator.id, email: result.operator.email },
          {
            action: 'operator.login',
            targetType: 'operator',
            targetId: result.operator.id,
            detail: { second_factor: result.operator.totp_secret_sealed !== null },
          },
        );
        return service.startSession(trx, result.operator);
      });
      addCookie(reply, sessionCookie(request, t, service.OPS_SESSION_HOURS * 3600));
      return seeOther(reply, '/ops/');
    });

    app.post('/logout', async (request, reply) => {
      await service.logout(deps.db, opsSessionOf(request));
      addCookie(reply, sessionCookie(request, '', 0));
      return seeOther(reply, '/ops/login');
    });

    // The token in these URLs is the link's secret: the access log shows the path without it.
    const logUrl = '/ops/setup/[token]';
    const setupOpen = {
      config: { opsPublic: true, logUrl },
      logSerializers: { req: (req: FastifyRequest) => ({ method: req.method, url: logUrl, remoteAddress: req.ip }) },
    };
    app.get('/setup/:token', setupOpen, async (request, reply) => {
      const t = (request.params as { token: string }).token;
      const op = await service.operatorForSetup(deps.db, t);
      if (!op)
        return sendPage(
          reply,
          opsPublicPage('Link expired', alert('error', 'This setup link is not valid any more. Ask an admin for a new one.')),
          404,
        );
      return sendPage(reply, setupPage(preauthToken(request, reply), op.email, t));
    });
    app.post('/setup/:token', setupOpen, async (request, reply) => {
      const t = (request.params as { token: string }).token;
      const csrf = preauthToken(request, reply);
      const password = service.PasswordField.safeParse(formOf(request).get('password') ?? '');
      const op = await service.operatorForSetup(deps.db, t);
      if (!op)
        return sendPage(
          reply,
          opsPublicPage('Link expired', alert('error', 'This setup link is not valid any more. Ask an admin for a new one.')),
          404,
        );
      if (!password.success) return sendPage(reply, setupPage(csrf, op.email, t, alert('error', password.error.issues[0]!.message)), 400);
      const token = await deps.inTransaction(async (trx) => {
        const done = await service.completeSetup(trx, t, password.data);
        return done ? service.startSession(trx, done) : null;
      });
      if (!token) return sendPage(reply, opsPublicPage('Link expired', alert('error', 'This setup link was just used.')), 404);
      addCookie(reply, sessionCookie(request, token, service.OPS_SESSION_HOURS * 3600));
      return seeOther(reply, '/ops/profile');
    });

    app.get('/profile', async (request, reply) => {
      const session = opsSessionOf(request);
      const pending = session.totpEnabled ? null : await service.pendingEnrolment(deps.db, deps.sealer, session);
      return sendPage(reply, profilePage(session, pending));
    });

    app.post('/profile/totp/start', async (request, reply) => {
      const session = opsSessionOf(request);
      if (session.totpEnabled)
        throw new AppError(
          'invalid_state_transition',
          'A second factor is already enrolled; ask an admin to reset your login to change it.',
        );
      await service.startEnrolment(deps.db, deps.sealer, session);
      return seeOther(reply, '/ops/profile');
    });

    app.post('/profile/totp/confirm', async (request, reply) => {
      const session = opsSessionOf(request);
      if (session.totpEnabled) return seeOther(reply, '/ops/profile');
      const ok = await deps.inTransaction((trx) => service.confirmEnrolment(trx, deps.sealer, session, formOf(request).get('code') ?? ''));
      if (!ok) {
        const pending = await service.pendingEnrolment(deps.db, deps.sealer, session);
        return sendPage(
          reply,
          profilePage(session, pending, alert('error', 'That code does not match. Check the clock of your device and try the next code.')),
          400,
        );
      }
      return sendPage(
        reply,
        profilePage({ ...session, totpEnabled: true }, null, alert('success', 'Second factor enrolled: log-ins now ask for a code.')),
      );
    });
  };
}

function profilePage(session: OpsSession, pending: { secret: string; uri: string } | null, notice?: Html): Html {
  const totp = session.totpEnabled
    ? html`<p>Second factor: <strong>enrolled</strong>. Each log-in asks for a code from your authenticator app.</p>`
    : pending
      ? html`<p>Add this key to your authenticator app (or open the otpauth link on the device that holds it), then enter the code it shows.</p>
${copyable('totp-secret', 'Secret key', pending.secret)}
${copyable('totp-uri', 'otpauth URI', pending.uri)}
<p><a href="${pending.uri}">Open in authenticator app</a></p>
<form method="post" action="/ops/profile/totp/confirm" class="stack">${opsCsrf(session)}
  <div class="field"><label for="totp-code">Code from the app</label><input id="totp-code" name="code" inputmode="numeric" autocomplete="one-time-code" required></div>
  <button type="submit">Turn on the second factor</button>
</form>`
      : html`<p>Second factor: <strong>not enrolled</strong>. An authenticator app (TOTP) protects this login if the password leaks.</p>
<form method="post" action="/ops/profile/totp/start">${opsCsrf(session)}<button type="submit">Set up an authenticator app</button></form>`;
  return opsPage(
    session,
    'profile',
    'Your login',
    html`${facts([
      ['Email', session.email],
      ['Role', session.role],
    ])}
<h2>Second factor</h2>
${totp}`,
    notice,
  );
}

/** Operators: an admin adds them (a one-time setup link), resets and disables them. */
function operatorRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    const page = async (session: OpsSession, notice?: Html) => {
      const rows = await repo.listOperators(deps.db);
      return opsPage(
        session,
        'operators',
        'Operators',
        html`${table(
          'Operators',
          [
            { label: 'Email', cell: (r) => r.email },
            { label: 'Role', cell: (r) => r.role },
            { label: 'State', cell: (r) => (r.disabled_at ? 'disabled' : r.password_hash ? 'active' : 'setup link sent') },
            { label: 'Second factor', cell: (r) => (r.totp_secret_sealed ? 'yes' : 'no') },
            { label: 'Added', cell: (r) => when(r.created_at.toISOString()) },
            {
              label: 'Actions',
              cell: (r) =>
                r.id === session.operatorId
                  ? '—'
                  : html`<form method="post" action="/ops/operators/${r.id}/reset" class="inline" data-confirm="Reset ${r.email}? Their password, second factor and sessions stop working.">${opsCsrf(session)}<button type="submit">New setup link</button></form>
<form method="post" action="/ops/operators/${r.id}/${r.disabled_at ? 'enable' : 'disable'}" class="inline">${opsCsrf(session)}<button type="submit">${r.disabled_at ? 'Enable' : 'Disable'}</button></form>`,
            },
          ],
          rows,
          'No operators.',
        )}
<h2>Add an operator</h2>
<form method="post" action="/ops/operators" class="stack">${opsCsrf(session)}
  <div class="field"><label for="op-email">Email</label><input id="op-email" name="email" type="email" required></div>
  <div class="field"><label for="op-role">Role</label><select id="op-role" name="role">${OPS_ROLES.map((r) => html`<option value="${r}">${r}</option>`)}</select></div>
  <button type="submit">Add operator</button>
</form>`,
        notice,
      );
    };
    const linkNotice = (email: string, path: string, request: FastifyRequest) =>
      alert(
        'success',
        html`Give ${email} this one-time setup link (valid ${service.SETUP_HOURS} hours, shown only now): ${copyable('setup-link', 'Setup link', `${request.protocol}://${request.host}${path}`)}`,
      );

    app.get('/operators', async (request, reply) => sendPage(reply, await page(allowed(request, 'operators'))));

    app.post('/operators', async (request, reply) => {
      const session = allowed(request, 'operators');
      const form = formOf(request);
      try {
        const created = await deps.inTransaction((trx) =>
          service.createOperator(trx, session, form.get('email') ?? '', form.get('role') ?? ''),
        );
        return sendPage(reply, await page(session, linkNotice(created.email, created.setupPath, request)));
      } catch (err) {
        if (err instanceof service.OperatorExists)
          return sendPage(reply, await page(session, alert('error', 'An operator with this email already exists.')), 409);
        if (err instanceof AppError && err.code === 'validation_failed')
          return sendPage(reply, await page(session, alert('error', err.message)), 400);
        throw err;
      }
    });

    app.post('/operators/:id/reset', async (request, reply) => {
      const session = allowed(request, 'operators');
      const id = (request.params as { id: string }).id;
      const done = await deps.inTransaction((trx) => service.resetOperator(trx, session, uuidParam(id)));
      return sendPage(reply, await page(session, linkNotice(done.email, done.setupPath, request)));
    });

    for (const action of ['disable', 'enable'] as const) {
      app.post(`/operators/:id/${action}`, async (request, reply) => {
        const session = allowed(request, 'operators');
        const id = uuidParam((request.params as { id: string }).id);
        await deps.inTransaction((trx) => service.setOperatorDisabled(trx, session, id, action === 'disable'));
        return seeOther(reply, '/ops/operators');
      });
    }
  };
}

/** The audit log: newest first, filtered by action or target, exported as CSV. */
function auditRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    const filters = (request: FastifyRequest) => {
      const q = request.query as Record<string, string | undefined>;
      return {
        action: q.action && /^[a-z_.]{1,60}$/.test(q.action) ? q.action : undefined,
        target: q.target && /^[\w-]{1,80}$/.test(q.target) ? q.target : undefined,
      };
    };

    app.get('/audit', async (request, reply) => {
      const session = allowed(request, 'audit');
      const f = filters(request);
      const rows = await repo.listAudit(deps.db, { ...f, limit: 200 });
      const body = html`<form method="get" action="/ops/audit" class="filters" role="search">
  <div class="field"><label for="f-action">Action</label><input id="f-action" name="action" value="${f.action ?? ''}"></div>
  <div class="field"><label for="f-target">Target id</label><input id="f-target" name="target" value="${f.target ?? ''}"></div>
  <div class="field actions"><button type="submit">Filter</button> <a href="/ops/audit">Clear</a></div>
</form>
<p><a href="/ops/audit.csv${f.action || f.target ? `?${new URLSearchParams(Object.entries(f).filter((e): e is [string, string] => Boolean(e[1]))).toString()}` : ''}" download>Export CSV</a> (up to 10,000 rows, newest first)</p>
${table(
  'Audit log',
  [
    { label: 'When', cell: (r) => when(r.at.toISOString()) },
    { label: 'Operator', cell: (r) => r.operator_email },
    { label: 'Action', cell: (r) => html`<code>${r.action}</code>` },
    { label: 'Target', cell: (r) => html`${r.target_type} <code class="id">${r.target_id}</code>` },
    { label: 'Reason', cell: (r) => r.reason },
    { label: 'Detail', cell: (r) => html`<code>${JSON.stringify(r.detail)}</code>` },
  ],
  rows,
  'Nothing recorded yet.',
)}`;
      return sendPage(reply, opsPage(session, 'audit', 'Audit log', body));
    });

    app.get('/audit.csv', async (request, reply) => {
      allowed(request, 'audit');
      const rows = await repo.listAudit(deps.db, { ...filters(request), limit: 10_000 });
      return reply
        .type('text/csv; charset=utf-8')
        .header('Content-Disposition', 'attachment; filename="ops-audit-log.csv"')
        .send(service.auditCsv(rows));
    });
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
    if (production && !isSecureRequest(request)) throw new AppError('https_required', 'Open the operator console over HTTPS.');
    const cookie = parseCookies(request.headers.cookie)[names(request).session];
    request.opsSession = cookie ? await service.sessionFor(deps.db, cookie) : null;
    if (!request.opsSession && !request.routeOptions.config?.opsPublic) {
      if (request.method === 'GET' || request.method === 'HEAD') return seeOther(reply, '/ops/login');
      throw new AppError('unauthorized', 'Log in first');
    }
  });
  app.addHook('preHandler', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    if (!originAllowed(request)) throw new AppError('csrf_failed', 'This form was sent from another site');
    const sent = formOf(request).get('_csrf') ?? undefined;
    const expected = request.opsSession ? request.opsSession.csrfToken : parseCookies(request.headers.cookie)[names(request).preauth];
    if (!tokensEqual(sent, expected)) {
      throw new AppError('csrf_failed', 'The form expired or did not come from this console. Reload the page and try again.');
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
