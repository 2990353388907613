import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageQuery } from '../../db/pagination.js';
import { findScoped, scoped, scopedUpdate } from '../../db/scoped.js';
import { REAL_TIME, type Timeline } from '../../core/clock.js';
import { inTimeline, nowOf } from '../../db/timeline.js';

export type ApprovalKind = 'fx_order' | 'payout' | 'payee';
export type ApprovalStatus = 'waiting_approval' | 'approved' | 'rejected' | 'expired';

export interface ApprovalsTable {
  id: string;
  tenant_id: string;
  environment: string;
  kind: ApprovalKind;
  subject_id: string;
  status: ColumnType<ApprovalStatus, ApprovalStatus | undefined, ApprovalStatus>;
  summary: string;
  amount: bigint | null;
  currency: string | null;
  created_by_user_id: string | null;
  created_by_role: string;
  decided_by_user_id: ColumnType<string | null, never, string | null>;
  decided_by_email: ColumnType<string | null, never, string | null>;
  decided_at: ColumnType<Date | null, never, Date>;
  reason: ColumnType<string | null, never, string | null>;
  expires_at: Date;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date | null, never, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    approvals: ApprovalsTable;
  }
}

export type ApprovalRow = Selectable<ApprovalsTable>;

export async function insertApproval(db: Queryable, row: Insertable<ApprovalsTable>): Promise<ApprovalRow> {
  return db.insertInto('approvals').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findApproval(db: Queryable, scope: Scope, id: string): Promise<ApprovalRow | undefined> {
  return findScoped(db, 'approvals', scope, id);
}

/**
 * The one transition out of `waiting_approval`, guarded by the status (and, for a decision, by
 * the expiry on the database clock): of an approve, a reject and the expiry job racing for the
 * same row, exactly one gets the row back; the others get undefined. Written out rather than with
 * `transition()`, which guards on the status alone: the expiry condition is part of this guard.
 */
export async function settleApproval(
  db: Queryable,
  scope: Scope,
  id: string,
  outcome: { status: 'approved' | 'rejected'; userId: string; email: string; reason: string | null } | { status: 'expired' },
  t: Timeline = REAL_TIME,
): Promise<ApprovalRow | undefined> {
  const decided =
    outcome.status === 'expired'
      ? { status: outcome.status }
      : { status: outcome.status, decided_by_user_id: outcome.userId, decided_by_email: outcome.email, reason: outcome.reason };
  return scopedUpdate(db, 'approvals', scope)
    .set({ ...decided, decided_at: nowOf(t), updated_at: nowOf(t) })
    .where('id', '=', id)
    .where('status', '=', 'waiting_approval')
    .where('expires_at', outcome.status === 'expired' ? '<=' : '>', nowOf(t))
    .returningAll()
    .executeTakeFirst();
}

export interface ListApprovalsQuery extends PageQuery {
  status?: ApprovalStatus | undefined;
  kind?: ApprovalKind | undefined;
}

export async function listApprovals(db: Queryable, scope: Scope, query: ListApprovalsQuery): Promise<Page<ApprovalRow>> {
  let base = scoped(db, 'approvals', scope);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.kind) base = base.where('kind', '=', query.kind);
  return paginate<ApprovalRow>(db, base, 'approvals.id', query, (qb) => qb.selectAll());
}

/** Waiting approvals past their expiry, across the timeline's businesses, oldest first (the expiry job). */
export async function dueExpiries(db: Queryable, limit: number, t: Timeline) {
  return db
    .selectFrom('approvals')
    .select(['id', 'tenant_id', 'environment'])
    .where('status', '=', 'waiting_approval')
    .where('expires_at', '<=', nowOf(t))
    .where(inTimeline(t, 'approvals'))
    .orderBy('expires_at')
    .limit(limit)
    .execute();
}
