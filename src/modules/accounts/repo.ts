import { sql, type ColumnType, type Insertable, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Database } from '../../db/types.js';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { compiledOnce, compiledPerShape } from '../../db/compiled.js';
import { paginate, type Page, type PageExtra } from '../../db/pagination.js';
import { findScoped, scoped, scopedUpdate, type Lock } from '../../db/scoped.js';
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

export async function findAccount(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return findScoped(db, 'accounts', ctx, id, lock);
}

/** The ledger balance columns a read shows next to the account (null without a balance row). */
export interface BalanceColumns {
  posted: bigint | null;
  pending_debits: bigint | null;
}
export type AccountWithBalance = AccountRow & BalanceColumns;

/**
 * Accounts with their ledger balances, in one statement: a read is one round trip. A read-only
 * join on ledger_balances (only the ledger writes it), no lock: the same snapshot as two reads.
 */
function withBalance(qb: SelectQueryBuilder<Database, 'accounts', object>) {
  return qb
    .leftJoin('ledger_balances', 'ledger_balances.account_id', 'accounts.id')
    .selectAll('accounts')
    .select(['ledger_balances.posted', 'ledger_balances.pending_debits']);
}

/** Accounts of one business and environment by id (one array parameter: one prepared text for any count). */
export async function findAccountsWithBalance(db: Queryable, ctx: Scope, ids: string[]): Promise<AccountWithBalance[]> {
  const { rows } = await accountsWithBalance.execute(db, ctx.tenantId, ctx.environment, ids);
  return rows;
}

/** Every account read's statement: compiled once (db/compiled.ts). */
const accountsWithBalance = compiledOnce((db: Queryable, tenantId: string, environment: Scope['environment'], ids: string[]) =>
  withBalance(scoped(db, 'accounts', { tenantId, environment })).where(sql<boolean>`accounts.id = any(${ids}::uuid[])`),
);

/**
 * An account read's row (accountReader): the columns its answer shows, the timestamps as
 * PostgreSQL's text of them (db/timestamp-text.ts makes that the answer's ISO text with no Date
 * in between). The business is the caller's (the statement is scoped to it), so neither
 * tenant_id nor environment is fetched.
 */
export interface AccountReadRow
  extends Pick<
      AccountRow,
      'id' | 'customer_id' | 'currency' | 'type' | 'label' | 'status' | 'category' | 'account_number' | 'bank_details' | 'metadata'
    >,
    BalanceColumns {
  created_at: string;
  updated_at: string;
}

/** Accounts of one business and environment by id, as an account read's rows (one statement, compiled once). */
export async function readAccounts(db: Queryable, ctx: Scope, ids: string[]): Promise<AccountReadRow[]> {
  const { rows } = await accountReads.execute(db, ctx.tenantId, ctx.environment, ids);
  return rows;
}

const accountReads = compiledOnce((db: Queryable, tenantId: string, environment: Scope['environment'], ids: string[]) =>
  scoped(db, 'accounts', { tenantId, environment })
    .leftJoin('ledger_balances', 'ledger_balances.account_id', 'accounts.id')
    .select([
      'accounts.id',
      'accounts.customer_id',
      'accounts.currency',
      'accounts.type',
      'accounts.label',
      'accounts.status',
      'accounts.category',
      'accounts.account_number',
      'accounts.bank_details',
      'accounts.metadata',
      sql<string>`accounts.created_at::text`.as('created_at'),
      sql<string>`accounts.updated_at::text`.as('updated_at'),
      'ledger_balances.posted',
      'ledger_balances.pending_debits',
    ])
    .where(sql<boolean>`accounts.id = any(${ids}::uuid[])`),
);

/**
 * Several accounts with a shared lock, in id order: a money movement holds it so a status change
 * (freeze, close at zero) cannot slip in between its checks and its commit.
 */
export async function lockAccountsShared(db: Queryable, ctx: Scope, ids: string[]) {
  return accountsInIdOrder(db, ctx, ids).selectAll().forShare().execute();
}

/**
 * Several accounts in id order, as a statement its caller sends (db/pipeline.ts): share-locked
 * (lockAccountsShared's), or, with `lock` 'none', read without a row lock by a caller that holds
 * their balance rows: a status change holds the account's balance row until it commits (migration
 * 1266), so the rows read then are as current as share-locked ones and stay so until the caller
 * commits.
 */
export function movementAccountsStatement(db: Queryable, ctx: Scope, ids: string[], lock: 'share' | 'none') {
  return movementAccountsOnce(db, ctx, ids, lock);
}

/** Its text has one parameter per id: compiled once per count and lock (db/compiled.ts). */
const movementAccountsOnce = compiledPerShape(
  (db: Queryable, ctx: Scope, ids: string[], lock: 'share' | 'none') => {
    const read = accountsInIdOrder(db, ctx, ids).select(MOVEMENT_COLUMNS);
    return lock === 'share' ? read.forShare() : read;
  },
  (ctx, ids, lock) => ({ shape: `${lock}:${ids.length}`, parameters: [ctx.tenantId, ctx.environment, ...ids] }),
);

/**
 * What a money movement reads of its accounts: whose and of which business, the currency, the
 * kind, and whether money may move. Not the bank details, metadata or times: no movement uses
 * them, and every transfer read and parsed them for two accounts.
 */
const MOVEMENT_COLUMNS = ['id', 'tenant_id', 'environment', 'customer_id', 'currency', 'type', 'status', 'category'] as const;
export type MovementAccountRow = Pick<AccountRow, (typeof MOVEMENT_COLUMNS)[number]>;

const accountsInIdOrder = (db: Queryable, ctx: Scope, ids: string[]) => scoped(db, 'accounts', ctx).where('id', 'in', ids).orderBy('id');

/** The business's own oldest open account in a currency (where fees go). */
export async function findBusinessAccount(db: Queryable, ctx: Scope, currency: string) {
  return scoped(db, 'accounts', ctx)
    .selectAll()
    .where('currency', '=', currency)
    .where('customer_id', 'is', null)
    .where('status', '<>', 'deleted')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
}

export async function updateStatus(db: Queryable, ctx: Scope, id: string, status: AccountRow['status']) {
  return scopedUpdate(db, 'accounts', ctx)
    .set({ status, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listAccounts(
  db: Queryable,
  ctx: Scope,
  query: ListAccountsQuery,
  extra?: PageExtra<unknown>,
): Promise<Page<AccountWithBalance>> {
  // Qualified columns: the page query joins ledger_balances, which has some of the same names.
  let base = scoped(db, 'accounts', ctx);
  if (query.customer_id) base = base.where('accounts.customer_id', '=', query.customer_id);
  if (query.label) base = base.where('accounts.label', '=', query.label);
  if (query.currency) base = base.where('accounts.currency', '=', query.currency);
  if (query.status) base = base.where('accounts.status', '=', query.status);
  if (query.type) base = base.where('accounts.type', '=', query.type);
  // Each page row carries its balance (one join), so a list is the page and its count, in parallel.
  return paginate<AccountWithBalance>(db, base, 'accounts.id', query, withBalance, 'desc', extra);
}

/**
 * The oldest active account of a customer (or, with `customerId` null, of the business itself)
 * in a currency: through accounts_customer_idx, or accounts_business_currency_idx for the business.
 */
export async function findOldestActiveAccount(db: Queryable, ctx: Scope, customerId: string | null, currency: string) {
  const base = scoped(db, 'accounts', ctx).where('currency', '=', currency).where('status', '=', 'active');
  return (customerId === null ? base.where('customer_id', 'is', null) : base.where('customer_id', '=', customerId))
    .select('id')
    .orderBy('id', 'asc')
    .limit(1)
    .executeTakeFirst();
}

/** Serializes on-demand creation of the business's fee account per currency (transaction-scoped). */
export async function lockBusinessCurrency(db: Queryable, ctx: Scope, currency: string) {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`${ctx.tenantId}:${ctx.environment}:${currency}`}, 0))`.execute(db);
}

/**
 * The account a bank's payer paid into, by the details this API gave it (across businesses: an
 * inbound file names the account, not the business): the IBAN, or the account number, in the
 * environment and currency of the bank connection.
 */
export async function findByBankDetails(
  db: Queryable,
  environment: string,
  currency: string,
  details: { iban?: string; accountNumber?: string },
) {
  let q = db.selectFrom('accounts').selectAll();
  // eslint-disable-next-line no-restricted-syntax -- an inbound payment names an account, not a business: the lookup spans businesses of the environment
  q = q.where('environment', '=', environment).where('currency', '=', currency);
  if (details.iban) q = q.where(sql<string>`bank_details ->> 'iban'`, '=', details.iban);
  else if (details.accountNumber) q = q.where('account_number', '=', details.accountNumber);
  else return undefined;
  return q.executeTakeFirst();
}

/** An account by id alone (the operator assigning a bank exception has no business key). */
export async function findAccountById(db: Queryable, id: string) {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}
