import type { ColumnType, Insertable, Selectable, Updateable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page } from '../../db/pagination.js';
import { newId } from '../../lib/ids.js';
import type { ApplicationStatus, ListApplicationsQuery, ValidationIssue } from './schema.js';
import { locked, scoped, type Lock } from '../../db/scoped.js';

type Json<T> = ColumnType<T, string, string>;

export interface AccountApplicationsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  application_type: 'individual' | 'business';
  status: ColumnType<ApplicationStatus, ApplicationStatus | undefined, ApplicationStatus>;
  data: Json<Record<string, unknown>>;
  metadata: Json<Record<string, unknown>>;
  validation_errors: ColumnType<ValidationIssue[], string | undefined, string>;
  tos_agreement_id: string | null;
  account_id: string | null;
  submitted_at: Date | null;
  processed_at: Date | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
  deleted_at: Date | null;
}

export interface AccountApplicationHistoryTable {
  id: string;
  tenant_id: string;
  environment: string;
  application_id: string;
  action: string;
  actor: string;
  changes: Json<Record<string, unknown>>;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    account_applications: AccountApplicationsTable;
    account_application_history: AccountApplicationHistoryTable;
  }
}

export type ApplicationRow = Selectable<AccountApplicationsTable>;

export async function insertApplication(db: Queryable, row: Insertable<AccountApplicationsTable>) {
  await db.insertInto('account_applications').values(row).execute();
}

/** A live (not deleted) application; `lock: 'update'` for a state change. */
export async function findApplication(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  const q = scoped(db, 'account_applications', ctx).selectAll().where('id', '=', id).where('deleted_at', 'is', null);
  return locked(q, lock).executeTakeFirst();
}

export async function updateApplication(db: Queryable, id: string, patch: Updateable<AccountApplicationsTable>) {
  return db
    .updateTable('account_applications')
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listApplications(
  db: Queryable,
  ctx: Scope,
  query: ListApplicationsQuery,
  statuses?: ApplicationStatus[],
): Promise<Page<ApplicationRow>> {
  let base = scoped(db, 'account_applications', ctx).where('deleted_at', 'is', null);
  if (query.status) base = base.where('status', '=', query.status);
  if (statuses) base = base.where('status', 'in', statuses);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  return paginate<ApplicationRow>(db, base, 'account_applications.id', query, (qb) => qb.selectAll());
}

export async function addHistory(
  db: Queryable,
  ctx: Scope,
  applicationId: string,
  action: string,
  actor: string,
  changes: Record<string, unknown> = {},
) {
  await db
    .insertInto('account_application_history')
    .values({
      id: newId(),
      tenant_id: ctx.tenantId,
      environment: ctx.environment,
      application_id: applicationId,
      action,
      actor,
      changes: JSON.stringify(changes),
    })
    .execute();
}

export async function historyOf(db: Queryable, applicationId: string) {
  return db.selectFrom('account_application_history').selectAll().where('application_id', '=', applicationId).orderBy('id').execute();
}
