import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Db, Queryable, UnitOfWork } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { AppError, notFound } from '../core/errors.js';
import type { Page, PageQuery } from '../db/pagination.js';
import { sha256 } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import { getTenant } from '../modules/tenants/service.js';
import { hashPassword, isCommonPassword, verifyPassword } from './passwords.js';
import * as repo from './repo.js';
import { grantableRoles, isRole, requirePermission, type Role } from './roles.js';
import type { Session } from './service.js';
import type { TeamMailer } from './team-mail.js';
import * as team from './team-repo.js';

/** An invitation link works for 7 days, a password reset link for 24 hours; each works once. */
export const INVITE_HOURS = 7 * 24;
export const RESET_HOURS = 24;

export const Email = z.string().trim().toLowerCase().max(254).email('Enter a valid email address');
export const NewPassword = z
  .string()
  .min(12, 'Use at least 12 characters')
  .max(200, 'Use at most 200 characters')
  .refine((p) => !isCommonPassword(p), 'This password is too common: choose another (a few unrelated words work well)');

/** The path of a link; the page prefixes it with the dashboard's origin. */
export const linkPath = (token: string) => `/dashboard/invite/${token}`;

const LINK_GONE = 'This link was already used or has expired. Ask for a new one.';

/** A client's mistake in a team form, shown on the page. */
export class TeamError extends AppError {}

function fail(message: string): never {
  throw new TeamError('bad_request', message);
}

export interface AuditEntry {
  id: string;
  user_email: string;
  action: string;
  target: string | null;
  detail: string | null;
  environment: string | null;
  created_at: string;
}

/**
 * Members of a business, their roles, invitation and reset links, password changes and the
 * audit log. No mail server is assumed: a link is shown to the person who made it (or printed
 * by the operator CLI) and travels by whatever channel they choose; when SMTP is configured the
 * team pages also mail it (team-mail.ts).
 */
export class TeamService {
  constructor(
    private readonly db: Db,
    /** The routes' unit of work (`deps.inTransaction`): this service never opens a transaction itself. */
    private readonly inTransaction: UnitOfWork,
    /** Mail for new links (SMTP configured), and the origin links are made with (PUBLIC_BASE_URL). */
    readonly links: { mailer: TeamMailer | null; publicBaseUrl?: string | undefined } = { mailer: null },
  ) {}

  async audit(
    session: Pick<Session, 'tenantId' | 'environment' | 'userId' | 'email'>,
    action: string,
    target?: string | null,
    detail?: string | null,
    db: Queryable = this.db,
  ) {
    await team.insertAudit(db, {
      id: newId(),
      tenant_id: session.tenantId,
      environment: session.environment,
      user_id: session.userId,
      user_email: session.email,
      action,
      target: target ?? null,
      detail: detail ?? null,
    });
  }

  async auditLog(session: Session, query: PageQuery & { action?: string }): Promise<Page<AuditEntry>> {
    requirePermission(session.role, 'team');
    const page = await team.listAudit(this.db, session.tenantId, query);
    return {
      ...page,
      items: page.items.map((r) => ({
        id: r.id,
        user_email: r.user_email,
        action: r.action,
        target: r.target,
        detail: r.detail,
        environment: r.environment,
        created_at: r.created_at.toISOString(),
      })),
    };
  }

  async businessName(tenantId: string): Promise<string> {
    return (await getTenant(this.db, tenantId))?.name ?? 'your business';
  }

  async members(session: Session) {
    const [members, invites] = await Promise.all([
      team.listMembers(this.db, session.tenantId),
      team.listOpenInvites(this.db, session.tenantId),
    ]);
    return { members, invites };
  }

  /** A new invitation: the link (token in the path) is returned once and stored only as a hash. */
  async invite(session: Session, input: { email: string; role: string }): Promise<string> {
    requirePermission(session.role, 'team');
    const email = Email.safeParse(input.email);
    if (!email.success) fail('Enter a valid email address');
    if (!isRole(input.role) || !grantableRoles(session.role).includes(input.role)) fail('Choose a role you may give');
    if (await repo.findUserByEmail(this.db, email.data)) fail('A dashboard login with this email already exists');
    const token = await this.newLink(
      session.tenantId,
      { kind: 'invite', email: email.data, role: input.role, user_id: null, created_by: session.userId },
      INVITE_HOURS,
    );
    await this.audit(session, 'member.invited', email.data, `role ${input.role}`);
    return token;
  }

  /** A password reset link for a member (owners' links only from owners). */
  async resetLink(session: Session, userId: string): Promise<{ token: string; email: string }> {
    requirePermission(session.role, 'team');
    const member = await team.findMember(this.db, session.tenantId, userId);
    if (!member) throw notFound('Member');
    if (member.role === 'owner' && session.role !== 'owner') fail('Only an owner can reset an owner’s password');
    const token = await this.newLink(
      session.tenantId,
      { kind: 'reset', email: member.email, role: member.role, user_id: member.id, created_by: session.userId },
      RESET_HOURS,
    );
    await this.audit(session, 'member.reset_link', member.email);
    return { token, email: member.email };
  }

  private async newLink(
    tenantId: string,
    link: { kind: 'invite' | 'reset'; email: string; role: Role; user_id: string | null; created_by: string | null },
    hours: number,
  ) {
    const token = randomBytes(32).toString('base64url');
    await team.insertInvite(this.db, {
      id: newId(),
      tenant_id: tenantId,
      ...link,
      token_hash: sha256(token),
      expires_at: new Date(Date.now() + hours * 3_600_000),
    });
    return token;
  }

  async revokeInvite(session: Session, id: string): Promise<void> {
    requirePermission(session.role, 'team');
    if (!(await team.revokeInvite(this.db, session.tenantId, id))) throw notFound('Invitation');
    await this.audit(session, 'member.invite_revoked', id);
  }

  /** The open link behind a token, or null (unknown, used or expired). */
  async openLink(token: string) {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    return (await team.findOpenInvite(this.db, sha256(token))) ?? null;
  }

  /**
   * Uses a link once: an invitation creates the login with its role; a reset sets the new
   * password and ends the login's sessions. Returns the login to start a session for.
   */
  async useLink(token: string, password: string): Promise<{ userId: string; tenantId: string; email: string }> {
    // The token first: a guessed one costs a lookup, never a password hash.
    if (!(await this.openLink(token))) fail(LINK_GONE);
    const parsed = NewPassword.safeParse(password);
    if (!parsed.success) fail(parsed.error.issues[0]!.message);
    const passwordHash = await hashPassword(parsed.data);
    return this.inTransaction(async (trx) => {
      const link = await this.openLinkIn(trx, token);
      if (!link || !(await team.useInvite(trx, link.id))) fail(LINK_GONE);
      let userId = link.user_id;
      if (link.kind === 'invite') {
        userId = newId();
        try {
          await repo.insertUser(trx, {
            id: userId,
            tenant_id: link.tenant_id,
            email: link.email,
            password_hash: passwordHash,
            role: link.role,
          });
        } catch (err) {
          if (isUniqueViolation(err)) fail('A dashboard login with this email already exists');
          throw err;
        }
      } else {
        await team.setPassword(trx, userId!, passwordHash);
        await team.deleteSessionsOf(trx, userId!);
      }
      const who = { tenantId: link.tenant_id, environment: 'sandbox' as const, userId: userId!, email: link.email };
      await team.insertAudit(trx, {
        id: newId(),
        tenant_id: who.tenantId,
        environment: null,
        user_id: who.userId,
        user_email: who.email,
        action: link.kind === 'invite' ? 'member.joined' : 'password.reset',
        target: who.email,
        detail: null,
      });
      return { userId: who.userId, tenantId: who.tenantId, email: who.email };
    });
  }

  private async openLinkIn(db: Queryable, token: string) {
    if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return null;
    return (await team.findOpenInvite(db, sha256(token))) ?? null;
  }

  /** Removes a member (never yourself, never the last owner; admins cannot remove owners). */
  async remove(session: Session, userId: string): Promise<void> {
    requirePermission(session.role, 'team');
    if (userId === session.userId) fail('You cannot remove yourself');
    await this.inTransaction(async (trx) => {
      const owners = await team.lockOwners(trx, session.tenantId);
      const member = await team.findMember(trx, session.tenantId, userId);
      if (!member) throw notFound('Member');
      if (member.role === 'owner' && session.role !== 'owner') fail('Only an owner can remove an owner');
      if (member.role === 'owner' && owners.length <= 1) fail('A business keeps at least one owner');
      await team.deleteMember(trx, session.tenantId, userId);
      await this.audit(session, 'member.removed', member.email, `role ${member.role}`, trx);
    });
  }

  /**
   * Changes a member's role (yours too). Owners may give any role; admins may give admin,
   * developer or viewer, and cannot change an owner. The last owner stays an owner: the owners'
   * rows are locked first, so two owners demoting each other at once cannot both succeed.
   */
  async changeRole(session: Session, userId: string, role: string): Promise<{ email: string; from: Role; to: Role }> {
    requirePermission(session.role, 'team');
    if (!isRole(role) || !grantableRoles(session.role).includes(role)) fail('Choose a role you may give');
    return this.inTransaction(async (trx) => {
      const owners = await team.lockOwners(trx, session.tenantId);
      const member = await team.findMember(trx, session.tenantId, userId);
      if (!member) throw notFound('Member');
      if (member.role === 'owner' && session.role !== 'owner') fail('Only an owner can change an owner’s role');
      if (member.role === role) fail(`${member.email} is already ${role}`);
      if (member.role === 'owner' && owners.length <= 1) fail('A business keeps at least one owner: make another member owner first');
      await team.setRole(trx, session.tenantId, userId, role);
      await this.audit(session, 'member.role_changed', member.email, `${member.role} → ${role}`, trx);
      return { email: member.email, from: member.role, to: role };
    });
  }

  /** Changes your own password; your other sessions end. */
  async changePassword(session: Session, current: string, next: string): Promise<void> {
    // The new password is checked first: a refused one costs no hash of the current one.
    const parsed = NewPassword.safeParse(next);
    if (!parsed.success) fail(`New password: ${parsed.error.issues[0]!.message}`);
    const me = await team.findMember(this.db, session.tenantId, session.userId);
    if (!me || !(await verifyPassword(current, me.password_hash))) fail('The current password is not correct');
    await team.setPassword(this.db, session.userId, await hashPassword(parsed.data));
    await team.deleteSessionsOf(this.db, session.userId, session.id);
    await this.audit(session, 'password.changed', session.email);
  }
}

/** Operator CLI: a password reset link for a login, by email (printed, never mailed). */
export async function operatorResetLink(db: Db, email: string): Promise<string> {
  const user = await repo.findUserByEmail(db, email.trim().toLowerCase());
  if (!user) throw new Error(`No dashboard login ${email}`);
  const token = randomBytes(32).toString('base64url');
  await team.insertInvite(db, {
    id: newId(),
    tenant_id: user.tenant_id,
    kind: 'reset',
    email: user.email,
    role: user.role,
    user_id: user.id,
    token_hash: sha256(token),
    created_by: null,
    expires_at: new Date(Date.now() + RESET_HOURS * 3_600_000),
  });
  await team.insertAudit(db, {
    id: newId(),
    tenant_id: user.tenant_id,
    environment: null,
    user_id: null,
    user_email: 'operator',
    action: 'member.reset_link',
    target: user.email,
    detail: 'operator CLI',
  });
  return linkPath(token);
}
