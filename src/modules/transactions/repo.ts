import { sql, type ColumnType, type Insertable, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Queryable } from '../../db/client.js';
import { write, type Writer } from '../../db/write-set.js';
import { insertPerShape } from '../../db/compiled.js';
import { valuesOf } from '../../db/values.js';
import type { Database } from '../../db/types.js';
import type { Scope } from '../../core/context.js';
import { dateRange, paginate, type Page, type PageExtra, type PageQuery } from '../../db/pagination.js';
import type { ListTransactionsQuery, VolumeQuery } from './schema.js';
import { scoped, transition } from '../../db/scoped.js';

export interface TransactionsTable {
  id: string;
  tenant_id: string;
  environment: string;
  account_id: string;
  customer_id: string | null;
  ledger_transaction_id: string | null;
  reference: string;
  client_reference: string | null;
  client_metadata: string | null;
  external_id: string | null;
  direction: 'in' | 'out';
  currency: string;
  amount: bigint;
  fee: ColumnType<bigint, bigint | undefined, bigint>;
  balance_before: bigint | null;
  balance_after: bigint | null;
  channel: string;
  transaction_type: string;
  status: string;
  description: ColumnType<string, string | undefined, string>;
  sending_account_id: string | null;
  receiving_account_id: string | null;
  card_id: string | null;
  payment_link_id: string | null;
  metadata: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    transactions: TransactionsTable;
  }
}

export type TransactionRow = Selectable<TransactionsTable>;
type Filters = Omit<ListTransactionsQuery, keyof PageQuery> & Partial<Pick<VolumeQuery, 'sending_account_id' | 'receiving_account_id'>>;

const insertTransactionRows = insertPerShape('transactions');

export async function insertTransactions(to: Writer, rows: Insertable<TransactionsTable>[]) {
  if (rows.length > 0) await write(to, (db) => insertTransactionRows(db, rows));
}

export async function findTransaction(db: Queryable, ctx: Scope, id: string) {
  return scoped(db, 'transactions', ctx).selectAll().where('id', '=', id).executeTakeFirst();
}

/** Every filter of the reference, scoped to the business and environment. */
function filtered(db: Queryable, ctx: Scope, f: Filters) {
  let q = scoped(db, 'transactions', ctx);
  if (f.customer_id) q = q.where('customer_id', '=', f.customer_id);
  if (f.account_id) q = q.where('account_id', '=', f.account_id);
  if (f.card_id) q = q.where('card_id', '=', f.card_id);
  if (f.payment_link_id) q = q.where('payment_link_id', '=', f.payment_link_id);
  // Fiat only: no transaction has a blockchain hash, so a tx_hash filter matches nothing.
  if (f.tx_hash) q = q.where(sql<boolean>`false`);
  if (f.channel) q = q.where('channel', '=', f.channel);
  if (f.direction) q = q.where('direction', '=', f.direction);
  if (f.status) q = q.where('status', '=', f.status);
  if (f.transaction_type) q = q.where('transaction_type', '=', f.transaction_type);
  if (f.currency) q = q.where('currency', '=', f.currency);
  if (f.reference) q = q.where('reference', '=', f.reference);
  if (f.sending_account_id) q = q.where('sending_account_id', '=', f.sending_account_id);
  if (f.receiving_account_id) q = q.where('receiving_account_id', '=', f.receiving_account_id);
  return q;
}

export async function listTransactions(
  db: Queryable,
  ctx: Scope,
  query: ListTransactionsQuery,
  extra?: PageExtra<unknown>,
): Promise<Page<TransactionRow>> {
  return paginate<TransactionRow>(
    db,
    filtered(db, ctx, query),
    'transactions.id',
    query,
    (qb) => qb.selectAll('transactions'),
    'desc',
    extra,
  );
}

function withDates<T extends SelectQueryBuilder<Database, 'transactions', object>>(
  q: T,
  query: Pick<PageQuery, 'from' | 'to' | 'start_date' | 'end_date'>,
): T {
  const { fromId, toIdExclusive } = dateRange(query as PageQuery);
  let out = q;
  if (fromId) out = out.where('id', '>=', fromId) as T;
  if (toIdExclusive) out = out.where('id', '<', toIdExclusive) as T;
  return out;
}

/**
 * Sum per currency. A transfer appears on both accounts (out and in) with the same reference:
 * each movement counts once, per (reference, transaction_type, currency).
 */
export async function volume(db: Queryable, ctx: Scope, query: VolumeQuery) {
  const inner = withDates(filtered(db, ctx, query), query)
    .distinctOn(['reference', 'transaction_type', 'currency'])
    .select(['reference', 'transaction_type', 'currency', 'amount'])
    .as('movements');
  return db
    .selectFrom(inner)
    .select(['currency', sql<string>`sum(amount)::text`.as('total'), sql<string>`count(*)::text`.as('n')])
    .groupBy('currency')
    .orderBy('currency')
    .execute();
}

/** One keyset page for the export: newest first, strictly older than `beforeId`. */
export async function exportPage(db: Queryable, ctx: Scope, query: VolumeQuery, beforeId: string | undefined, size: number) {
  let q = withDates(filtered(db, ctx, query), query).selectAll();
  if (beforeId) q = q.where('id', '<', beforeId);
  return q.orderBy('id', 'desc').limit(size).execute();
}

/**
 * The accounts of the pending transactions among `ids` (of any business, named by rows locked in
 * this transaction), each given with its business and environment: the primary key's lookup.
 */
export async function pendingAccounts(db: Queryable, ids: (Scope & { id: string })[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  // eslint-disable-next-line no-restricted-syntax -- set-based over transactions of several businesses, each matched on its own scope
  const { rows } = await sql<{ id: string; account_id: string }>`
    select t.id, t.account_id from transactions t
    join ${valuesOf(
      'k',
      { t: 'uuid', e: 'text', id: 'uuid' },
      ids.map((k) => [k.tenantId, k.environment, k.id]),
    )} on t.tenant_id = k.t and t.environment = k.e and t.id = k.id
    where t.status = 'pending'`.execute(db);
  return new Map(rows.map((r) => [r.id, r.account_id]));
}

/** Completes many pending transactions in one statement, each with its balances, as finishPending does one. */
export async function completePending(
  to: Writer,
  rows: (Scope & { id: string; balance_before: bigint | null; balance_after: bigint | null; ledger_transaction_id: string })[],
): Promise<void> {
  if (rows.length === 0) return;
  await write(
    to,
    // eslint-disable-next-line no-restricted-syntax -- set-based over transactions of several businesses, each matched on its own scope
    () => sql`
    update transactions t set status = 'completed', balance_before = coalesce(u.b, t.balance_before),
      balance_after = coalesce(u.a, t.balance_after), ledger_transaction_id = u.l, updated_at = now()
    from ${valuesOf(
      'u',
      { t: 'uuid', e: 'text', id: 'uuid', b: 'bigint', a: 'bigint', l: 'uuid' },
      rows.map((r) => [r.tenantId, r.environment, r.id, r.balance_before, r.balance_after, r.ledger_transaction_id]),
    )}
    where t.tenant_id = u.t and t.environment = u.e and t.id = u.id and t.status = 'pending'`,
  );
}

/** A pending transaction's outcome (two-phase movements: payouts, collections). */
export async function finishPending(
  db: Queryable,
  ctx: Scope,
  id: string,
  patch: {
    status: 'completed' | 'failed';
    balance_before?: bigint | null;
    balance_after?: bigint | null;
    ledger_transaction_id?: string | null;
  },
) {
  return transition(db, 'transactions', ctx, id, 'pending', { ...patch, updated_at: new Date() });
}
