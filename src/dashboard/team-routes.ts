import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { notFound } from '../core/errors.js';
import { statusOf } from '../http/errors.js';
import { PageQuery } from '../db/pagination.js';
import { isUuid } from '../lib/ids.js';
import { html, type Html } from './html.js';
import { alert, appPage, copyable, csrfField, filterForm, pager, publicPage, table, when } from './layout.js';
import { can, grantableRoles } from './roles.js';
import { formOf, preauthToken, seeOther, sendPage, sessionCookie, sessionOf } from './replies.js';
import type { Counters } from '../lib/counters.js';
import { addCookie, FailureLimiter } from './security.js';
import { SESSION_HOURS, type DashboardService, type Flash, type Session } from './service.js';
import type { LinkMail } from './team-mail.js';
import { linkPath, TeamError, type AuditEntry, type TeamService } from './team-service.js';

type Members = Awaited<ReturnType<TeamService['members']>>;

function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.headers.host ?? 'localhost'}`;
}

function linkCard(flash: Extract<Flash, { kind: 'link' }>, origin: string): Html {
  const mailed = flash.mailed;
  const how = !mailed
    ? 'No email is sent: give this link to the person yourself.'
    : mailed.sent
      ? `It was also emailed to ${mailed.to}.`
      : `The email to ${mailed.to} could not be sent: give this link to the person yourself.`;
  return html`<section class="card one-time" aria-labelledby="link-title">
  <h2 id="link-title">${flash.title}</h2>
  ${mailed && !mailed.sent ? alert('error', how) : ''}<p>${mailed && !mailed.sent ? '' : html`${how} `}It works once; this is the only time it is shown.</p>
  ${copyable('one-time-link', 'Link', `${origin}${flash.path}`)}
</section>`;
}

/** A member's role as a select with its own Change button (owners and admins). */
function roleForm(session: Session, m: Members['members'][number]): Html {
  const roles = grantableRoles(session.role);
  const options = roles.includes(m.role) ? roles : [m.role, ...roles];
  return html`<form method="post" action="/dashboard/team/members/${m.id}/role" class="inline">${csrfField(session)}
    <label class="sr-only" for="role-${m.id}">Role of ${m.email}</label>
    <select id="role-${m.id}" name="role">${options.map((r) => html`<option value="${r}"${r === m.role ? html` selected` : ''}>${r}</option>`)}</select>
    <button type="submit" aria-label="Change the role of ${m.email}">Change</button></form>`;
}

function teamPage(session: Session, view: Members, flash: Flash | null, origin: string, notice?: Html): Html {
  const manage = can(session.role, 'team');
  const members = table(
    'Members',
    [
      { label: 'Email', cell: (m: Members['members'][number]) => html`${m.email}${m.id === session.userId ? ' (you)' : ''}` },
      { label: 'Role', cell: (m) => (manage && (m.role !== 'owner' || session.role === 'owner') ? roleForm(session, m) : m.role) },
      { label: 'Since', cell: (m) => when(m.created_at.toISOString()) },
      {
        label: 'Actions',
        cell: (m) =>
          manage && m.id !== session.userId
            ? html`<form method="post" action="/dashboard/team/members/${m.id}/reset-link">${csrfField(session)}
    <button type="submit" aria-label="Password reset link for ${m.email}">Reset link</button></form>
  <form method="post" action="/dashboard/team/members/${m.id}/remove" data-confirm="Remove ${m.email} from the business?">${csrfField(session)}
    <button type="submit" class="danger" aria-label="Remove ${m.email}">Remove</button></form>`
            : null,
      },
    ],
    view.members,
    'No members.',
  );
  const invites = table(
    'Open invitations',
    [
      { label: 'Email', cell: (i: Members['invites'][number]) => i.email },
      { label: 'Role', cell: (i) => i.role },
      { label: 'Expires', cell: (i) => when(i.expires_at.toISOString()) },
      {
        label: 'Actions',
        cell: (i) =>
          manage
            ? html`<form method="post" action="/dashboard/team/invites/${i.id}/revoke">${csrfField(session)}<button type="submit" aria-label="Revoke the invitation of ${i.email}">Revoke</button></form>`
            : null,
      },
    ],
    view.invites,
    'No open invitations.',
  );
  const inviteForm = manage
    ? html`<section class="card"><h2>Invite a member</h2>
  <form method="post" action="/dashboard/team/invite" class="inline">${csrfField(session)}
    <label for="invite-email">Email</label><input id="invite-email" name="email" type="email" required autocomplete="off">
    <label for="invite-role">Role</label><select id="invite-role" name="role">${grantableRoles(session.role).map((r) => html`<option value="${r}"${r === 'developer' ? html` selected` : ''}>${r}</option>`)}</select>
    <button type="submit" class="primary">Invite</button>
  </form>
  <p>Owners and admins see and rotate API keys and manage the team; developers also manage webhooks; viewers only read.</p>
</section>`
    : '';
  return appPage(
    session,
    'team',
    'Team',
    html`${flash?.kind === 'link' ? linkCard(flash, origin) : ''}${inviteForm}
<section class="card"><h2>Members</h2>${members}</section>
<section class="card"><h2>Open invitations</h2>${invites}</section>`,
    notice,
  );
}

function auditPage(
  session: Session,
  filters: Record<string, string | undefined>,
  page: Awaited<ReturnType<TeamService['auditLog']>>,
): Html {
  return appPage(
    session,
    'audit',
    'Audit log',
    html`${filterForm('/dashboard/audit', [{ name: 'action', label: 'Action' }], filters)}
${table(
  'Dashboard actions',
  [
    { label: 'Time', cell: (e: AuditEntry) => when(e.created_at) },
    { label: 'Who', cell: (e) => e.user_email },
    { label: 'Action', cell: (e) => html`<code>${e.action}</code>` },
    { label: 'Target', cell: (e) => e.target },
    { label: 'Detail', cell: (e) => e.detail },
    { label: 'Environment', cell: (e) => e.environment },
  ],
  page.items,
  'Nothing recorded yet.',
)}${pager('/dashboard/audit', { action: filters.action }, page as never)}`,
  );
}

function profilePage(session: Session, notice?: Html): Html {
  return appPage(
    session,
    'profile',
    'Your login',
    html`<section class="card"><dl class="facts"><dt>Email</dt><dd>${session.email}</dd><dt>Role</dt><dd>${session.role}</dd></dl></section>
<section class="card"><h2>Change password</h2>
<form method="post" action="/dashboard/profile/password">${csrfField(session)}
  <div class="field"><label for="pw-current">Current password</label><input id="pw-current" name="current_password" type="password" autocomplete="current-password" required></div>
  <div class="field"><label for="pw-new">New password (at least 12 characters)</label><input id="pw-new" name="new_password" type="password" autocomplete="new-password" required></div>
  <button type="submit" class="primary">Change password</button>
</form></section>`,
    notice,
  );
}

function linkPage(csrf: string, link: { kind: string; email: string; role: string } | null, token: string, message?: Html): Html {
  if (!link)
    return publicPage(
      'Link not valid',
      html`${alert('error', 'This link was already used or has expired. Ask for a new one.')}<p><a href="/dashboard/login">Log in</a></p>`,
    );
  const invite = link.kind === 'invite';
  return publicPage(
    invite ? 'Join the business' : 'Choose a new password',
    html`<p>${invite ? html`You were invited as <strong>${link.role}</strong> with the email <strong>${link.email}</strong>.` : html`New password for <strong>${link.email}</strong>.`}</p>
<form method="post" action="${linkPath(token)}">
  <input type="hidden" name="_csrf" value="${csrf}">
  <div class="field"><label for="in-password">Password (at least 12 characters)</label>
  <input id="in-password" name="password" type="password" autocomplete="new-password" required></div>
  <button type="submit" class="primary">${invite ? 'Join' : 'Set password'}</button>
</form>`,
    message,
  );
}

const AuditQuery = PageQuery.extend({ action: z.string().trim().max(100).optional() });

/** Team, audit log, your login, and the invitation / reset link pages (public, by token). */
/** The window of the password-check limits below. */
const CHECK_WINDOW_MS = 15 * 60_000;

export function teamRoutes(service: DashboardService, team: TeamService, counters: Counters) {
  const options = team.links;
  // A wrong current password is a password guess, like a failed log-in: limited per login and
  // per client address, so a stolen session cannot search for the password behind it.
  const passwordChecks = {
    user: new FailureLimiter(counters, 'password-check-user', 10, CHECK_WINDOW_MS),
    ip: new FailureLimiter(counters, 'password-check-ip', 20, CHECK_WINDOW_MS),
  };
  // Failed uses of a link (unknown, used or expired token, refused password) per client address.
  const linkUses = new FailureLimiter(counters, 'link-ip', 20, CHECK_WINDOW_MS);
  const tooMany = (reply: FastifyReply, wait: number) => {
    reply.header('Retry-After', String(wait));
    return alert('error', `Too many failed attempts. Try again in ${Math.ceil(wait / 60)} minutes.`);
  };
  return async function plugin(app: FastifyInstance) {
    /** Mails a new link when SMTP is configured; what happened goes into the flash. */
    async function mail(request: FastifyRequest, session: Session, link: Omit<LinkMail, 'url' | 'business' | 'from'> & { path: string }) {
      if (!options.mailer) return undefined;
      const origin = (options.publicBaseUrl ?? originOf(request)).replace(/\/+$/, '');
      const sent = await options.mailer.send(
        { ...link, url: `${origin}${link.path}`, business: await team.businessName(session.tenantId), from: session.email },
        request.log,
      );
      return { to: link.to, sent };
    }
    async function render(request: FastifyRequest, reply: FastifyReply, notice?: Html, status = 200) {
      const session = sessionOf(request);
      const flash = notice ? null : await service.takeFlash(session);
      const origin = (options.publicBaseUrl ?? originOf(request)).replace(/\/+$/, '');
      return sendPage(reply, teamPage(session, await team.members(session), flash, origin, notice), status);
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
        const mailed = await mail(request, session, { kind: 'invite', to: email, role, path: linkPath(token) });
        await service.setFlash(session, { kind: 'link', title: `Invitation link for ${email}`, path: linkPath(token), mailed });
      }),
    );
    app.post('/team/members/:id/reset-link', async (request, reply) =>
      act(request, reply, async (session) => {
        const link = await team.resetLink(session, memberId(request));
        const mailed = await mail(request, session, { kind: 'reset', to: link.email, path: linkPath(link.token) });
        await service.setFlash(session, {
          kind: 'link',
          title: `Password reset link for ${link.email}`,
          path: linkPath(link.token),
          mailed,
        });
      }),
    );
    app.post('/team/members/:id/remove', async (request, reply) =>
      act(request, reply, (session) => team.remove(session, memberId(request))),
    );
    app.post('/team/members/:id/role', async (request, reply) =>
      act(request, reply, async (session, form) => {
        await team.changeRole(session, memberId(request), form.get('role') ?? '');
      }),
    );
    app.post('/team/invites/:id/revoke', async (request, reply) =>
      act(request, reply, (session) => team.revokeInvite(session, memberId(request))),
    );

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
  };
}
