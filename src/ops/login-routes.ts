import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import type { Deps } from '../http/deps.js';
import { html, type Html } from '../dashboard/html.js';
import { alert, copyable, facts } from '../dashboard/layout.js';
import { addCookie, FailureLimiter, isSecureRequest, parseCookies, randomToken, serializeCookie } from '../dashboard/security.js';
import { opsCsrf, opsPage, opsPublicPage } from './layout.js';
import { opsCan } from './roles.js';
import * as service from './service.js';
import type { OpsSession } from './service.js';
import { formOf, opsSessionOf, seeOther, sendPage } from './replies.js';

const LOGIN_WINDOW_MS = 15 * 60_000;

/**
 * Cookies of the console, apart from the dashboard's: a business user's dashboard cookie opens
 * nothing here, and an operator's cookie nothing there. `__Host-` and Secure over TLS.
 */
export function cookieNames(request: FastifyRequest) {
  const prefix = isSecureRequest(request) ? '__Host-' : '';
  return { session: `${prefix}fso_session`, preauth: `${prefix}fso_csrf` };
}

function sessionCookie(request: FastifyRequest, value: string, maxAgeSeconds: number) {
  const secure = isSecureRequest(request);
  return serializeCookie(cookieNames(request).session, value, { secure, maxAgeSeconds, sameSite: 'Strict' });
}

function preauthToken(request: FastifyRequest, reply: FastifyReply): string {
  const secure = isSecureRequest(request);
  const name = cookieNames(request).preauth;
  const existing = parseCookies(request.headers.cookie)[name];
  if (existing && existing.length === 43) return existing;
  const t = randomToken();
  addCookie(reply, serializeCookie(name, t, { secure, maxAgeSeconds: 3600, sameSite: 'Strict' }));
  return t;
}

export function landing(session: OpsSession): string {
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
export function loginRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    passwordRoutes(app, deps);
    setupLinkRoutes(app, deps);
    profileRoutes(app, deps);
  };
}

/** Log in with email, password and (once enrolled) a code; log out. */
function passwordRoutes(app: FastifyInstance, deps: Deps): void {
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
}

/** The one-time setup link an admin hands a new or reset operator. */
function setupLinkRoutes(app: FastifyInstance, deps: Deps): void {
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
}

/** The operator's own login: the second factor enrolled. */
function profileRoutes(app: FastifyInstance, deps: Deps): void {
  app.get('/profile', async (request, reply) => {
    const session = opsSessionOf(request);
    const pending = session.totpEnabled ? null : await service.pendingEnrolment(deps.db, deps.sealer, session);
    return sendPage(reply, profilePage(session, pending));
  });

  app.post('/profile/totp/start', async (request, reply) => {
    const session = opsSessionOf(request);
    if (session.totpEnabled)
      throw new AppError('invalid_state_transition', 'A second factor is already enrolled; ask an admin to reset your login to change it.');
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
