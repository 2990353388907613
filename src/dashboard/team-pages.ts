import { html, type Html } from './html.js';
import { alert, appPage, copyable, csrfField, filterForm, pager, publicPage, table, when } from './layout.js';
import { can, grantableRoles } from './roles.js';
import type { Flash, Session } from './service.js';
import { linkPath, type AuditEntry, type TeamService } from './team-service.js';

/** The pages of the team area: members and invitations, audit log, your login, invitation links. */
export type Members = Awaited<ReturnType<TeamService['members']>>;

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

function membersTable(session: Session, view: Members): Html {
  const manage = can(session.role, 'team');
  return table(
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
}

export function teamPage(session: Session, view: Members, flash: Flash | null, origin: string, notice?: Html): Html {
  const manage = can(session.role, 'team');
  const members = membersTable(session, view);
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
    manage
      ? html`<p class="empty">No open invitations. Invite a teammate with the form above: they get a link to choose a password.</p>`
      : 'No open invitations.',
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

export function auditPage(
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
  filters.action
    ? 'No actions match.'
    : 'Nothing recorded yet. Log-ins, key rotations, team changes and approval settings made on the dashboard are recorded here.',
)}${pager('/dashboard/audit', { action: filters.action }, page as never)}`,
  );
}

export function profilePage(session: Session, notice?: Html): Html {
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

export function linkPage(csrf: string, link: { kind: string; email: string; role: string } | null, token: string, message?: Html): Html {
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
