import { sql, type ColumnType, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { paginate, type Page } from '../../http/pagination.js';
import type { BankDetails } from '../../lib/bank-details.js';
import type { ListAccountsQuery } from './schema.js';

export interface AccountsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string | null;
  currency: string;
  type: 'regular' | 'savings';
  label: string;
  status: ColumnType<'active' | 'frozen' | 'deleted', 'active' | undefined, 'active' | 'frozen' | 'deleted'>;
  category: ColumnType<string, string | undefined, string>;
  account_number: string;
  bank_details: ColumnType<BankDetails, string, string>;
  metadata: ColumnType<Record<string, unknown>, string, string>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    accounts: AccountsTable;
  }
}

export type AccountRow = Selectable<AccountsTable>;
type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;

/** Inserts unless the account number is taken (returns false: the caller draws another). */
export async function insertAccount(db: Queryable, row: Insertable<AccountsTable>): Promise<boolean> {
  const result = await db
    .insertInto('accounts')
    .values(row)
    .onConflict((oc) => oc.columns(['environment', 'currency', 'account_number']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

export async function findAccount(db: Queryable, ctx: Scope, id: string, lock?: 'update' | 'share') {
  let q = db
    .selectFrom('accounts')
    .selectAll()
    .where('tenant_id', '=', ctx.tenantId)
    .where('environment', '=', ctx.environment)
    .where('id', '=', id);
  if (lock === 'update') q = q.forUpdate();
  if (lock === 'share') q = q.forShare();
  return q.executeTakeFirst();
}

/**
 * Several accounts with a shared lock, in id order: a money movement holds it so a status change
 * (freeze, close at zero) cannot slip in between its checks and its commit.
 */
export async function lockAccountsShared(db: Queryable, ctx: Scope, ids: string[]) {
  return db
    .selectFrom('accounts')
    .selectAll()
    .where('tenant_id', '=', ctx.tenantId)
    .where('environment', '=', ctx.environment)
    .where('id', 'in', ids)
    .orderBy('id')
    .forShare()
    .execute();
}

export async function findAccounts(db: Queryable, ctx: Scope, ids: string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('accounts')
    .selectAll()
    .where('tenant_id', '=', ctx.tenantId)
    .where('environment', '=', ctx.environment)
    .where('id', 'in', ids)
    .execute();
}

/** The business's own oldest open account in a currency (where fees go). */
export async function findBusinessAccount(db: Queryable, ctx: Scope, currency: string) {
  return db
    .selectFrom('accounts')
    .selectAll()
    .where('tenant_id', '=', ctx.tenantId)
    .where('environment', '=', ctx.environment)
    .where('currency', '=', currency)
    .where('customer_id', 'is', null)
    .where('status', '<>', 'deleted')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

export async function updateStatus(db: Queryable, ctx: Scope, id: string, status: AccountRow['status']) {
  return db
    .updateTable('accounts')
    .set({ status, updated_at: new Date() })
    .where('tenant_id', '=', ctx.tenantId)
    .where('environment', '=', ctx.environment)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listAccounts(db: Queryable, ctx: Scope, query: ListAccountsQuery): Promise<Page<AccountRow>> {
  let base = db.selectFrom('accounts').where('tenant_id', '=', ctx.tenantId).where('environment', '=', ctx.environment);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  if (query.label) base = base.where('label', '=', query.label);
  if (query.currency) base = base.where('currency', '=', query.currency);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.type) base = base.where('type', '=', query.type);
  return paginate<AccountRow>(db, base, 'accounts.id', query, (qb) => qb.selectAll());
}

/** Serializes on-demand creation of the business's fee account per currency (transaction-scoped). */
export async function lockBusinessCurrency(db: Queryable, ctx: Scope, currency: string) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`${ctx.tenantId}:${ctx.environment}:${currency}`}, 0))`.execute(db);
}

/** The business, environment and customer of each customer-owned account among `ids` (any business). */
export async function customerOwners(db: Queryable, ids: string[]) {
  if (ids.length === 0) return [];
  return db
    .selectFrom('accounts')
    .select(['tenant_id', 'environment', 'customer_id'])
    .where('id', 'in', ids)
    .where('customer_id', 'is not', null)
    .execute() as Promise<{ tenant_id: string; environment: string; customer_id: string }[]>;
}

/** Share-locks account rows by id, ascending, without reading them (a group commit's first step). */
export async function shareLockById(db: Queryable, ids: string[]) {
  if (ids.length === 0) return;
  await sql`select 1 from accounts where id in (${sql.join(ids)}) order by id for share`.execute(db);
}
