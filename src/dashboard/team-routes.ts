import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { notFound } from '../core/errors.js';
import { statusOf } from '../http/errors.js';
import { PageQuery } from '../db/pagination.js';
import { isUuid } from '../lib/ids.js';
import type { Html } from './html.js';
import { alert } from './layout.js';
import { formOf, originOf, preauthToken, seeOther, sendPage, sessionCookie, sessionOf } from './replies.js';
import type { Counters } from '../lib/counters.js';
import { addCookie, FailureLimiter } from './security.js';
import { SESSION_HOURS, type DashboardService, type Session } from './service.js';
import type { LinkMail } from './team-mail.js';
import { auditPage, linkPage, profilePage, teamPage } from './team-pages.js';
import { linkPath, TeamError, type TeamService } from './team-service.js';

const AuditQuery = PageQuery.extend({ action: z.string().trim().max(100).optional() });

/** The window of the password-check limits below. */
const CHECK_WINDOW_MS = 15 * 60_000;

/** What the route groups share: the services and the failure limits. */
interface TeamContext {
  service: DashboardService;
  team: TeamService;
  /** A wrong current password is a password guess, like a failed log-in: limited per login and
   * per client address, so a stolen session cannot search for the password behind it. */
  passwordChecks: { user: FailureLimiter; ip: FailureLimiter };
  /** Failed uses of a link (unknown, used or expired token, refused password) per client address. */
  linkUses: FailureLimiter;
}

function tooMany(reply: FastifyReply, wait: number): Html {
  reply.header('Retry-After', String(wait));
  return alert('error', `Too many failed attempts. Try again in ${Math.ceil(wait / 60)} minutes.`);
}

/** Team, audit log, your login, and the invitation / reset link pages (public, by token). */
export function teamRoutes(service: DashboardService, team: TeamService, counters: Counters) {
  const ctx: TeamContext = {
    service,
    team,
    passwordChecks: {
      user: new FailureLimiter(counters, 'password-check-user', 10, CHECK_WINDOW_MS),
      ip: new FailureLimiter(counters, 'password-check-ip', 20, CHECK_WINDOW_MS),
    },
    linkUses: new FailureLimiter(counters, 'link-ip', 20, CHECK_WINDOW_MS),
  };
  return async function plugin(app: FastifyInstance) {
    memberRoutes(app, ctx);
    auditAndProfileRoutes(app, ctx);
    linkRoutes(app, ctx);
  };
}

/** The link's address as the person receiving it will open it. */
function publicOrigin(team: TeamService, request: FastifyRequest): string {
  return (team.links.publicBaseUrl ?? originOf(request)).replace(/\/+$/, '');
}

/** Mails a new link when SMTP is configured; what happened goes into the flash. */
async function mailLink(
  team: TeamService,
  request: FastifyRequest,
  session: Session,
  link: Omit<LinkMail, 'url' | 'business' | 'from'> & { path: string },
) {
  const mailer = team.links.mailer;
  if (!mailer) return undefined;
  const url = `${publicOrigin(team, request)}${link.path}`;
  const sent = await mailer.send({ ...link, url, business: await team.businessName(session.tenantId), from: session.email }, request.log);
  return { to: link.to, sent };
}

/** Members and invitations: every action answers with the team page. */
function memberRoutes(app: FastifyInstance, { service, team }: TeamContext) {
  async function render(request: FastifyRequest, reply: FastifyReply, notice?: Html, status = 200) {
    const session = sessionOf(request);
    const flash = notice ? null : await service.takeFlash(session);
    return sendPage(reply, teamPage(session, await team.members(session), flash, publicOrigin(team, request), notice), status);
  }
  /** Runs a team action; a refused one shows its message on the team page. */
  async function act(request: FastifyRequest, reply: FastifyReply, work: (s: Session, form: URLSearchParams) => Promise<void>) {
    try {
      await work(sessionOf(request), formOf(request));
      return seeOther(reply, '/dashboard/team');
    } catch (err) {
      if (!(err instanceof TeamError)) throw err;
      return render(request, reply, alert('error', err.message), statusOf(err));
    }
  }
  const memberId = (request: FastifyRequest) => {
    const id = (request.params as { id: string }).id;
    if (!isUuid(id)) throw notFound('Member');
    return id;
  };

  app.get('/team', async (request, reply) => render(request, reply));
  app.post('/team/invite', async (request, reply) =>
    act(request, reply, async (session, form) => {
      const email = (form.get('email') ?? '').trim().toLowerCase();
      const role = form.get('role') ?? '';
      const token = await team.invite(session, { email, role });
      const mailed = await mailLink(team, request, session, { kind: 'invite', to: email, role, path: linkPath(token) });
      await service.setFlash(session, { kind: 'link', title: `Invitation link for ${email}`, path: linkPath(token), mailed });
    }),
  );
  app.post('/team/members/:id/reset-link', async (request, reply) =>
    act(request, reply, async (session) => {
      const link = await team.resetLink(session, memberId(request));
      const mailed = await mailLink(team, request, session, { kind: 'reset', to: link.email, path: linkPath(link.token) });
      await service.setFlash(session, { kind: 'link', title: `Password reset link for ${link.email}`, path: linkPath(link.token), mailed });
    }),
  );
  app.post('/team/members/:id/remove', async (request, reply) => act(request, reply, (session) => team.remove(session, memberId(request))));
  app.post('/team/members/:id/role', async (request, reply) =>
    act(request, reply, async (session, form) => {
      await team.changeRole(session, memberId(request), form.get('role') ?? '');
    }),
  );
  app.post('/team/invites/:id/revoke', async (request, reply) =>
    act(request, reply, (session) => team.revokeInvite(session, memberId(request))),
  );
}

function auditAndProfileRoutes(app: FastifyInstance, { team, passwordChecks }: TeamContext) {
  app.get('/audit', async (request, reply) => {
    const session = sessionOf(request);
    const q = (request.query ?? {}) as Record<string, string | undefined>;
    const filters = { action: q.action || undefined, page: q.page || undefined };
    const parsed = AuditQuery.safeParse({ ...filters, items_per_page: '50' });
    const page = await team.auditLog(session, parsed.success ? parsed.data : { page: 1 });
    return sendPage(reply, auditPage(session, filters, page));
  });

  app.get('/profile', async (request, reply) => sendPage(reply, profilePage(sessionOf(request))));
  app.post('/profile/password', async (request, reply) => {
    const session = sessionOf(request);
    const form = formOf(request);
    const keys = { user: session.userId, ip: request.ip };
    const wait = Math.max(await passwordChecks.user.blockedFor(keys.user), await passwordChecks.ip.blockedFor(keys.ip));
    if (wait > 0) return sendPage(reply, profilePage(session, tooMany(reply, wait)), 429);
    try {
      await team.changePassword(session, form.get('current_password') ?? '', form.get('new_password') ?? '');
    } catch (err) {
      if (!(err instanceof TeamError)) throw err;
      await passwordChecks.user.fail(keys.user);
      await passwordChecks.ip.fail(keys.ip);
      return sendPage(reply, profilePage(session, alert('error', err.message)), 400);
    }
    return sendPage(reply, profilePage(session, alert('success', 'Password changed. Your other sessions were ended.')));
  });
}

function linkRoutes(app: FastifyInstance, { service, team, linkUses }: TeamContext) {
  // The token in these URLs is the link's secret: the access log (logUrl) and Fastify's own
  // error lines (the req serializer) show the path without it.
  const logUrl = '/dashboard/invite/[token]';
  const open = {
    config: { dashboardPublic: true, logUrl },
    logSerializers: {
      req: (req: FastifyRequest) => ({ method: req.method, url: logUrl, host: req.host, remoteAddress: req.ip }),
    },
  };
  // Someone already logged in (another login in this browser) posts with that session's token.
  const csrfFor = (request: FastifyRequest, reply: FastifyReply) => request.dashboardSession?.csrfToken ?? preauthToken(request, reply);
  app.get('/invite/:token', open, async (request, reply) => {
    const token = (request.params as { token: string }).token;
    const link = await team.openLink(token);
    return sendPage(reply, linkPage(csrfFor(request, reply), link, token), link ? 200 : 404);
  });
  app.post('/invite/:token', open, async (request, reply) => {
    const token = (request.params as { token: string }).token;
    const wait = await linkUses.blockedFor(request.ip);
    if (wait > 0) return sendPage(reply, linkPage(csrfFor(request, reply), null, token, tooMany(reply, wait)), 429);
    try {
      const user = await team.useLink(token, formOf(request).get('password') ?? '');
      const started = await service.startSessionFor(user.userId);
      addCookie(reply, sessionCookie(request, started.token, SESSION_HOURS * 3600));
      return seeOther(reply, '/dashboard/overview');
    } catch (err) {
      if (!(err instanceof TeamError)) throw err;
      await linkUses.fail(request.ip);
      const link = await team.openLink(token);
      return sendPage(reply, linkPage(csrfFor(request, reply), link, token, alert('error', err.message)), 400);
    }
  });
}
