import { sql, type ColumnType, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page } from '../../db/pagination.js';
import { locked, scoped, scopedUpdate, transition, type Lock } from '../../db/scoped.js';
import type { ListExternalAccountsQuery, PayeeAddress } from './schema.js';

export interface ExternalAccountsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  payee_type: 'ach_wire' | 'sepa' | 'swift' | 'bank_account' | 'mobile_money' | 'fps';
  status: ColumnType<'pending' | 'active' | 'failed', 'pending' | undefined, 'active' | 'failed'>;
  account_name: string;
  account_number: string | null;
  iban: string | null;
  bic: string | null;
  routing_number: string | null;
  sort_code: string | null;
  phone_number: string | null;
  bank_name: string | null;
  institution_id: string | null;
  institution_name: string | null;
  institution_type: 'bank' | 'mobile_money' | null;
  institution_country: string | null;
  currency: string;
  account_owner_type: string | null;
  account_type: string | null;
  payment_rail: string | null;
  address: ColumnType<PayeeAddress | null, string | null, never>;
  verified_name: ColumnType<string | null, never, string | null>;
  failure_reason: ColumnType<string | null, never, string | null>;
  approval_status: ColumnType<
    'waiting_approval' | 'approved' | 'rejected' | 'expired' | null,
    'waiting_approval' | null | undefined,
    'approved' | 'rejected' | 'expired'
  >;
  dedupe_key: string;
  verify_after: ColumnType<Date, Date | undefined, Date>;
  verify_attempts: ColumnType<number, never, number>;
  deleted_at: ColumnType<Date | null, never, Date>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    external_accounts: ExternalAccountsTable;
  }
}

export type ExternalAccountRow = Selectable<ExternalAccountsTable>;

export async function insert(db: Queryable, row: Insertable<ExternalAccountsTable>): Promise<boolean> {
  // A concurrent duplicate loses on the partial unique index and gets the winner's row instead.
  // The index predicate is written as literal SQL, not parameters: PostgreSQL matches it against
  // the partial index when planning, and a prepared statement's generic plan (chosen after five
  // executions) cannot prove `status <> $1` implies the index's `status <> 'failed'`.
  const result = await db
    .insertInto('external_accounts')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'environment', 'customer_id', 'dedupe_key'])
        .where(sql<boolean>`deleted_at is null and status <> 'failed'`)
        .doNothing(),
    )
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

/** A payee that is not deleted (so not `findScoped`, which knows nothing of `deleted_at`). */
export async function find(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  const q = scoped(db, 'external_accounts', ctx).selectAll().where('id', '=', id).where('deleted_at', 'is', null);
  return locked(q, lock).executeTakeFirst();
}

export async function findDuplicate(db: Queryable, ctx: Scope, customerId: string, dedupeKey: string) {
  return scoped(db, 'external_accounts', ctx)
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('dedupe_key', '=', dedupeKey)
    .where('deleted_at', 'is', null)
    .where('status', '<>', 'failed')
    .executeTakeFirst();
}

export async function list(db: Queryable, ctx: Scope, query: ListExternalAccountsQuery): Promise<Page<ExternalAccountRow>> {
  let base = scoped(db, 'external_accounts', ctx).where('deleted_at', 'is', null);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.payee_type) base = base.where('payee_type', '=', query.payee_type);
  if (query.currency) base = base.where('currency', '=', query.currency);
  return paginate<ExternalAccountRow>(db, base, 'external_accounts.id', query, (qb) => qb.selectAll());
}

/** pending -> active | failed, at most once (the status condition is the guard). */
export async function finishVerification(
  db: Queryable,
  ctx: Scope,
  id: string,
  outcome: { status: 'active'; verifiedName: string } | { status: 'failed'; reason: string },
): Promise<ExternalAccountRow | undefined> {
  return transition(db, 'external_accounts', ctx, id, 'pending', {
    status: outcome.status,
    verified_name: outcome.status === 'active' ? outcome.verifiedName : null,
    failure_reason: outcome.status === 'failed' ? outcome.reason : null,
    updated_at: new Date(),
  });
}

export async function softDelete(db: Queryable, ctx: Scope, id: string): Promise<boolean> {
  const result = await scopedUpdate(db, 'external_accounts', ctx)
    .set({ deleted_at: new Date(), updated_at: new Date() })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Pending payees due for verification, across businesses, claimed for `leaseSeconds` (their
 * verify_after moves forward, so a crashed worker's claim comes back on its own).
 */
export async function claimDueVerifications(db: Queryable, limit: number, leaseSeconds: number) {
  const result = await sql<ExternalAccountRow>`
    update external_accounts
    set verify_after = now() + make_interval(secs => ${leaseSeconds}), verify_attempts = verify_attempts + 1
    where id in (
      select id from external_accounts
      where status = 'pending' and deleted_at is null and verify_after <= now()
        and approval_status is distinct from 'waiting_approval'
      order by verify_after limit ${limit}
      for update skip locked)
    returning *`.execute(db);
  return result.rows;
}

/**
 * A payee waiting for approval (maker-checker) leaves the wait once, under the status guard:
 * approved (verification starts now), or rejected / expired (`failed`). Written out rather than with
 * `transition()`: the guard is on two columns (`status` and `approval_status`), and an approval
 * leaves `status` as it is.
 */
export async function finishApproval(
  db: Queryable,
  ctx: Scope,
  id: string,
  outcome: 'approved' | 'rejected' | 'expired',
  reason: string,
  verifyAfter: Date,
): Promise<ExternalAccountRow | undefined> {
  const patch =
    outcome === 'approved'
      ? { approval_status: outcome, verify_after: verifyAfter }
      : { approval_status: outcome, status: 'failed' as const, failure_reason: reason };
  return scopedUpdate(db, 'external_accounts', ctx)
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('approval_status', '=', 'waiting_approval')
    .returningAll()
    .executeTakeFirst();
}
