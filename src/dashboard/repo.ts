import { sql, type ColumnType, type Selectable } from 'kysely';
import type { Queryable } from '../db/client.js';
import { scoped } from '../db/scoped.js';
import type { Environment } from '../core/context.js';
import type { Role } from './roles.js';

export interface DashboardUsersTable {
  id: string;
  tenant_id: string;
  email: string;
  password_hash: string;
  role: Role;
  created_at: ColumnType<Date, never, never>;
}

export interface DashboardSessionsTable {
  id: string;
  token_hash: Buffer;
  user_id: string;
  tenant_id: string;
  environment: Environment;
  csrf_token: string;
  flash_sealed: string | null;
  created_at: ColumnType<Date, never, never>;
  expires_at: Date;
}

export interface DashboardPublicKeysTable {
  tenant_id: string;
  environment: Environment;
  public_key: string;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../db/types.js' {
  interface Database {
    dashboard_users: DashboardUsersTable;
    dashboard_sessions: DashboardSessionsTable;
    dashboard_public_keys: DashboardPublicKeysTable;
  }
}

export type UserRow = Selectable<DashboardUsersTable>;
export type SessionRow = Selectable<DashboardSessionsTable> & { email: string; role: Role };

export async function insertUser(db: Queryable, row: Omit<UserRow, 'created_at'>): Promise<void> {
  await db.insertInto('dashboard_users').values(row).execute();
}

export async function findUserByEmail(db: Queryable, email: string) {
  return db.selectFrom('dashboard_users').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function findUserById(db: Queryable, id: string) {
  return db.selectFrom('dashboard_users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertSession(db: Queryable, row: Omit<Selectable<DashboardSessionsTable>, 'created_at'>) {
  await db.insertInto('dashboard_sessions').values(row).execute();
}

/** The live session of a token hash, with its user's email (expired sessions are not found). */
export async function findSession(db: Queryable, tokenHash: Buffer): Promise<SessionRow | undefined> {
  return db
    .selectFrom('dashboard_sessions')
    .innerJoin('dashboard_users', 'dashboard_users.id', 'dashboard_sessions.user_id')
    .selectAll('dashboard_sessions')
    .select(['dashboard_users.email', 'dashboard_users.role'])
    .where('dashboard_sessions.token_hash', '=', tokenHash)
    .where('dashboard_sessions.expires_at', '>', new Date())
    .executeTakeFirst();
}

export async function deleteSession(db: Queryable, id: string): Promise<void> {
  await db.deleteFrom('dashboard_sessions').where('id', '=', id).execute();
}

export async function deleteExpiredSessions(db: Queryable, limit = 500): Promise<number> {
  const result = await db
    .deleteFrom('dashboard_sessions')
    .where('id', 'in', (eb) => eb.selectFrom('dashboard_sessions').select('id').where('expires_at', '<=', new Date()).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export async function setEnvironment(db: Queryable, id: string, environment: Environment): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ environment }).where('id', '=', id).execute();
}

export async function setFlash(db: Queryable, id: string, sealed: string | null): Promise<void> {
  await db.updateTable('dashboard_sessions').set({ flash_sealed: sealed }).where('id', '=', id).execute();
}

/** Reads and clears the flash in one statement, so a secret is shown by one response only. */
export async function takeFlash(db: Queryable, id: string): Promise<string | null> {
  const row = await sql<{ flash_sealed: string | null }>`
    update dashboard_sessions s set flash_sealed = null
    from (select id, flash_sealed from dashboard_sessions where id = ${id} for update) old
    where s.id = old.id and old.flash_sealed is not null
    returning old.flash_sealed`.execute(db);
  return row.rows[0]?.flash_sealed ?? null;
}

export async function upsertPublicKey(db: Queryable, tenantId: string, environment: Environment, publicKey: string) {
  await db
    .insertInto('dashboard_public_keys')
    .values({ tenant_id: tenantId, environment, public_key: publicKey })
    .onConflict((oc) => oc.columns(['tenant_id', 'environment']).doUpdateSet({ public_key: publicKey, updated_at: new Date() }))
    .execute();
}

export async function findPublicKey(db: Queryable, tenantId: string, environment: Environment) {
  const row = await scoped(db, 'dashboard_public_keys', { tenantId, environment }).select('public_key').executeTakeFirst();
  return row?.public_key ?? null;
}
