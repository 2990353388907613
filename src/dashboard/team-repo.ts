import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { Queryable } from '../db/client.js';
import { paginate, type Page, type PageQuery } from '../db/pagination.js';
import type { Role } from './roles.js';

export interface DashboardInvitesTable {
  id: string;
  tenant_id: string;
  kind: 'invite' | 'reset';
  email: string;
  role: Role;
  user_id: string | null;
  token_hash: Buffer;
  created_by: string | null;
  created_at: ColumnType<Date, never, never>;
  expires_at: Date;
  used_at: ColumnType<Date | null, never, Date>;
}

export interface DashboardAuditLogTable {
  id: string;
  tenant_id: string;
  environment: string | null;
  user_id: string | null;
  user_email: string;
  action: string;
  target: string | null;
  detail: string | null;
  created_at: ColumnType<Date, never, never>;
}

declare module '../db/types.js' {
  interface Database {
    dashboard_invites: DashboardInvitesTable;
    dashboard_audit_log: DashboardAuditLogTable;
  }
}

export type AuditRow = Selectable<DashboardAuditLogTable>;

export async function listMembers(db: Queryable, tenantId: string) {
  return db
    .selectFrom('dashboard_users')
    .select(['id', 'email', 'role', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .orderBy('id')
    .limit(500)
    .execute();
}

export async function findMember(db: Queryable, tenantId: string, userId: string) {
  return db
    .selectFrom('dashboard_users')
    .select(['id', 'email', 'role', 'password_hash'])
    .where('tenant_id', '=', tenantId)
    .where('id', '=', userId)
    .executeTakeFirst();
}

/**
 * The business's owners, their rows locked until the transaction ends: two concurrent demotions
 * (or removals) of the last two owners cannot both see "another owner is left".
 */
export async function lockOwners(db: Queryable, tenantId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('dashboard_users')
    .select('id')
    .where('tenant_id', '=', tenantId)
    .where('role', '=', 'owner')
    .orderBy('id')
    .forUpdate()
    .execute();
  return rows.map((r) => r.id);
}

export async function setRole(db: Queryable, tenantId: string, userId: string, role: Role): Promise<void> {
  await db.updateTable('dashboard_users').set({ role }).where('tenant_id', '=', tenantId).where('id', '=', userId).execute();
}

export async function deleteMember(db: Queryable, tenantId: string, userId: string): Promise<boolean> {
  const result = await db.deleteFrom('dashboard_users').where('tenant_id', '=', tenantId).where('id', '=', userId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function setPassword(db: Queryable, userId: string, passwordHash: string): Promise<void> {
  await db.updateTable('dashboard_users').set({ password_hash: passwordHash }).where('id', '=', userId).execute();
}

/** Ends every session of a login (after a password change or reset, except the one kept). */
export async function deleteSessionsOf(db: Queryable, userId: string, keepSessionId?: string): Promise<void> {
  let q = db.deleteFrom('dashboard_sessions').where('user_id', '=', userId);
  if (keepSessionId) q = q.where('id', '!=', keepSessionId);
  await q.execute();
}

export async function insertInvite(db: Queryable, row: Insertable<DashboardInvitesTable>): Promise<void> {
  await db.insertInto('dashboard_invites').values(row).execute();
}

/** An unused, unexpired link by its token hash. */
export async function findOpenInvite(db: Queryable, tokenHash: Buffer) {
  return db
    .selectFrom('dashboard_invites')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', new Date())
    .executeTakeFirst();
}

/** Marks a link used; false when another request used it first. */
export async function useInvite(db: Queryable, id: string): Promise<boolean> {
  const result = await db
    .updateTable('dashboard_invites')
    .set({ used_at: new Date() })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

export async function listOpenInvites(db: Queryable, tenantId: string) {
  return db
    .selectFrom('dashboard_invites')
    .select(['id', 'email', 'role', 'created_at', 'expires_at'])
    .where('tenant_id', '=', tenantId)
    .where('kind', '=', 'invite')
    .where('used_at', 'is', null)
    .where('expires_at', '>', new Date())
    .orderBy('id', 'desc')
    .limit(100)
    .execute();
}

export async function revokeInvite(db: Queryable, tenantId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('dashboard_invites')
    .where('tenant_id', '=', tenantId)
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function insertAudit(db: Queryable, row: Insertable<DashboardAuditLogTable>): Promise<void> {
  await db.insertInto('dashboard_audit_log').values(row).execute();
}

export async function listAudit(db: Queryable, tenantId: string, query: PageQuery & { action?: string }): Promise<Page<AuditRow>> {
  let base = db.selectFrom('dashboard_audit_log').where('tenant_id', '=', tenantId);
  if (query.action) base = base.where('action', '=', query.action);
  return paginate<AuditRow>(db, base, 'dashboard_audit_log.id', query, (qb) => qb.selectAll());
}
