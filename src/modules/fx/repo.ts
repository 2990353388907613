import { sql, type ColumnType, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import { write, writeTogether, type Writer } from '../../db/write-set.js';
import { valuesOf } from '../../db/values.js';
import type { Environment, Scope } from '../../core/context.js';
import { paginate, type Page } from '../../db/pagination.js';
import { isUuid } from '../../lib/ids.js';
import type { OverrideStore } from '../../rails/fx.js';
import { rateFromDb } from '../../lib/decimal.js';
import type { ListOrdersQuery } from './schema.js';
import { findScoped, scoped, scopedDelete, scopedUpdate, type Lock } from '../../db/scoped.js';
import type { Timeline } from '../../core/clock.js';
import { inTimeline, nowIn } from '../../db/timeline.js';

/** numeric columns: written as decimal strings, read back as strings (db/client.ts). */
type Numeric = ColumnType<string, string, string>;
type NullableNumeric = ColumnType<string | null, string | null | undefined, string | null>;

export interface FxSandboxRatesTable {
  tenant_id: string;
  environment: string;
  base: string;
  quote: string;
  rate: Numeric;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface FxQuotesTable {
  id: string;
  tenant_id: string;
  environment: string;
  from_currency: string;
  to_currency: string;
  direction: 'BUY' | 'SELL';
  amount: bigint;
  to_amount: bigint;
  mid_rate: Numeric;
  rate: Numeric;
  spread_bps: number;
  fee_bps: number;
  expires_at: ColumnType<Date, Date, never>;
  used_at: ColumnType<Date | null, never, Date>;
  order_id: ColumnType<string | null, never, string>;
  created_at: ColumnType<Date, never, never>;
}

export interface FxOrdersTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string | null;
  order_type: 'market' | 'limit';
  side: 'buy' | 'sell';
  base: string;
  quote: string;
  amount: bigint;
  converted_amount: bigint | null;
  rate: NullableNumeric;
  mid_rate: NullableNumeric;
  spread_bps: number;
  target_rate: NullableNumeric;
  fee_bps: number;
  fee: bigint | null;
  status: 'waiting_approval' | 'pending' | 'completed' | 'cancelled' | 'expired' | 'rejected';
  source_type: string;
  source_id: string;
  destination_type: string;
  destination_id: string;
  /** destination_type 'ssi': the customer's account the proceeds pass through (ssi.ts). */
  settlement_account_id: ColumnType<string | null, string | null | undefined, never>;
  /** destination_type 'ssi': the payout of the proceeds to the external account. */
  payout_transfer_id: ColumnType<string | null, never, string | null>;
  quote_id: string | null;
  hold_id: string | null;
  ledger_transaction_id: string | null;
  transaction_id: string | null;
  rejection_reason: string | null;
  created_by_user_id: ColumnType<string | null, string | null | undefined, never>;
  created_by_role: ColumnType<string | null, string | null | undefined, never>;
  approved_by_user_id: ColumnType<string | null, never, string>;
  approved_at: ColumnType<Date | null, never, Date>;
  rejected_by_user_id: ColumnType<string | null, never, string>;
  rejected_at: ColumnType<Date | null, never, Date>;
  executed_at: Date | null;
  expires_at: Date | null;
  checked_at: Date | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: Date | null;
}

declare module '../../db/types.js' {
  interface Database {
    fx_sandbox_rates: FxSandboxRatesTable;
    fx_quotes: FxQuotesTable;
    fx_orders: FxOrdersTable;
  }
}

export type QuoteRow = Selectable<FxQuotesTable>;
export type OrderRow = Selectable<FxOrdersTable>;

/** The business's simulated rates (sandbox): the statement that reads them, and how to read its rows. */
export const sandboxRates: OverrideStore = {
  statement: (db: Queryable, ctx: Scope) => scoped(db, 'fx_sandbox_rates', ctx).selectAll().compile(),
  read: (rows) =>
    (rows as Selectable<FxSandboxRatesTable>[]).map((r) => ({
      base: r.base,
      quote: r.quote,
      rate: rateFromDb(r.rate),
      updatedAt: r.updated_at,
    })),
};

/** Sets a pair's simulated rate and drops a stored reverse pair, so the two never disagree. */
export async function upsertSandboxRate(db: Queryable, ctx: Scope, base: string, quote: string, rate: string): Promise<Date> {
  await scopedDelete(db, 'fx_sandbox_rates', ctx).where('base', '=', quote).where('quote', '=', base).execute();
  const row = await db
    .insertInto('fx_sandbox_rates')
    .values({ tenant_id: ctx.tenantId, environment: ctx.environment, base, quote, rate })
    .onConflict((oc) => oc.columns(['tenant_id', 'environment', 'base', 'quote']).doUpdateSet({ rate, updated_at: sql`now()` }))
    .returning('updated_at')
    .executeTakeFirstOrThrow();
  return row.updated_at;
}

/**
 * The database clock sets expires_at (now + ttl), the same clock that useQuote compares with: the
 * business's test clock when its sandbox runs on one (db/timeline.ts nowIn).
 */
const scopeOfRow = (row: { tenant_id: string; environment: string }) => ({
  tenantId: row.tenant_id,
  environment: row.environment as Environment,
});

export async function insertQuote(
  db: Queryable,
  row: Omit<Insertable<FxQuotesTable>, 'expires_at'>,
  ttlSeconds: number,
): Promise<QuoteRow> {
  return db
    .insertInto('fx_quotes')
    .values({ ...row, expires_at: sql<Date>`${nowIn(scopeOfRow(row))} + make_interval(secs => ${ttlSeconds})` })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findQuote(db: Queryable, ctx: Scope, id: string, lock?: Lock): Promise<QuoteRow | undefined> {
  return findScoped(db, 'fx_quotes', ctx, id, lock);
}

/**
 * Marks a quote used by an order, only if it is still unused and unexpired (database clock). Not a
 * `transition()`: a quote has no status; the guard is `used_at is null` and the expiry.
 */
export async function useQuote(db: Queryable, ctx: Scope, id: string, orderId: string): Promise<boolean> {
  const result = await scopedUpdate(db, 'fx_quotes', ctx)
    .set({ used_at: sql<Date>`now()`, order_id: orderId })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIn(ctx))
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * Locks the quotes `ids` of one business and environment (ascending id, as a lone order locks its
 * one quote), with whether each is still live by the database clock (the clock useQuote compares with).
 */
export async function lockQuotes(db: Queryable, ctx: Scope, ids: string[]): Promise<(QuoteRow & { live: boolean })[]> {
  if (ids.length === 0) return [];
  return scoped(db, 'fx_quotes', ctx)
    .selectAll()
    .select(sql<boolean>`expires_at > ${nowIn(ctx)}`.as('live'))
    .where('id', 'in', [...new Set(ids)].sort())
    .orderBy('id')
    .forUpdate()
    .execute();
}

/** Marks quotes used by their orders, the caller having checked them under lock (a batch's write set). */
export async function markQuotesUsed(to: Writer, ctx: Scope, uses: { quoteId: string; orderId: string }[]): Promise<void> {
  await writeTogether(to, (db) =>
    uses.map((u) =>
      scopedUpdate(db, 'fx_quotes', ctx)
        .set({ used_at: sql<Date>`now()`, order_id: u.orderId })
        .where('id', '=', u.quoteId),
    ),
  );
}

export async function insertOrder(db: Queryable, row: Insertable<FxOrdersTable>): Promise<OrderRow> {
  return db.insertInto('fx_orders').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * Orders a batch executed, each built in memory as the database will hold it, written with the
 * batch's other writes. The columns only a later change sets (approval, rejection, settlement
 * payout) are null here and left out.
 */
export async function insertOrders(to: Writer, rows: OrderRow[]): Promise<void> {
  if (rows.length === 0) return;
  const values = rows.map(
    ({ payout_transfer_id: _p, approved_by_user_id: _a, approved_at: _at, rejected_by_user_id: _r, rejected_at: _rt, ...row }) => row,
  );
  await write(to, (db) => db.insertInto('fx_orders').values(values));
}

export async function findOrder(db: Queryable, ctx: Scope, id: string, lock?: Lock): Promise<OrderRow | undefined> {
  return findScoped(db, 'fx_orders', ctx, id, lock);
}

/**
 * Changes an order its caller holds: locked (`findOrder(…, 'update')`, the worker's
 * `claimPendingOrder`) with its status just checked, or inserted in the same transaction. The row
 * lock, not a status condition, makes each change happen once, so this stays a plain update rather
 * than a `transition()` (whose `undefined` for a lost race no caller here could get).
 */
export async function updateOrder(db: Queryable, ctx: Scope, id: string, patch: Updateable<FxOrdersTable>): Promise<OrderRow> {
  return scopedUpdate(db, 'fx_orders', ctx)
    .set({ ...patch, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listOrders(db: Queryable, ctx: Scope, query: ListOrdersQuery): Promise<Page<OrderRow>> {
  let base = scoped(db, 'fx_orders', ctx);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.order_type) base = base.where('order_type', '=', query.order_type);
  if (query.side) base = base.where('side', '=', query.side);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  if (query.account_id) {
    const id = query.account_id;
    base = base.where((eb) => eb.or([eb('source_id', '=', id), eb('destination_id', '=', id), eb('settlement_account_id', '=', id)]));
  }
  if (query.search !== undefined) {
    // Order references are the order ids: search matches an order, quote, customer or account id.
    const s = query.search.trim().toLowerCase();
    if (!isUuid(s)) base = base.where(sql<boolean>`false`);
    else
      base = base.where((eb) =>
        eb.or(
          ['id', 'quote_id', 'customer_id', 'source_id', 'destination_id'].map((c) =>
            eb(eb.ref(`fx_orders.${c}` as 'fx_orders.id'), '=', s),
          ),
        ),
      );
  }
  return paginate<OrderRow>(db, base, 'fx_orders.id', query, (qb) => qb.selectAll());
}

/**
 * Waiting limit orders for the worker, least recently checked first, not yet checked since
 * `since` (the start of the worker's tick, database clock), locked with SKIP LOCKED so several
 * workers share the queue.
 */
export async function claimWaitingOrders(db: Queryable, since: Date, limit: number, t: Timeline): Promise<OrderRow[]> {
  return db
    .selectFrom('fx_orders')
    .selectAll()
    .where('status', '=', 'pending')
    .where(inTimeline(t, 'fx_orders'))
    .where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<', since)]))
    .orderBy(sql`checked_at nulls first`)
    .orderBy('id')
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
}

/** One waiting order by id, locked for settling; undefined if it is no longer pending or another worker holds it. */
export async function claimPendingOrder(db: Queryable, id: string): Promise<OrderRow | undefined> {
  return db
    .selectFrom('fx_orders')
    .selectAll()
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .forUpdate()
    .skipLocked()
    .executeTakeFirst();
}

/** Waiting orders among `ids`, locked for settling in ascending id; those no longer pending or held by another worker are absent. */
export async function claimPendingOrders(db: Queryable, ids: string[]): Promise<OrderRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('fx_orders')
    .selectAll()
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .orderBy('id')
    .forUpdate()
    .skipLocked()
    .execute();
}

/** How a waiting order ends (worker.ts settleDueOrders): executed, expired or rejected. */
export type OrderEnding = Pick<
  OrderRow,
  'id' | 'status' | 'rejection_reason' | 'rate' | 'mid_rate' | 'converted_amount' | 'fee' | 'ledger_transaction_id' | 'transaction_id'
>;

/**
 * Ends many orders claimed in this transaction (claimPendingOrders) in one statement, each with its
 * own columns; an executed one is stamped executed_at = now(). One part of a batch's writes.
 */
export async function endOrders(to: Writer, endings: OrderEnding[]): Promise<void> {
  if (endings.length === 0) return;
  const text = (value: string | bigint | null) => (value === null ? null : String(value));
  const rows = endings.map((e) => [
    e.id,
    e.status,
    e.rejection_reason,
    e.rate,
    e.mid_rate,
    text(e.converted_amount),
    text(e.fee),
    e.ledger_transaction_id,
    e.transaction_id,
  ]);
  const columns = {
    id: 'uuid',
    status: 'text',
    rejection_reason: 'text',
    rate: 'numeric',
    mid_rate: 'numeric',
    converted_amount: 'bigint',
    fee: 'bigint',
    ledger_transaction_id: 'uuid',
    transaction_id: 'uuid',
  };
  await write(
    to,
    () => sql`
    update fx_orders o set status = e.status, rejection_reason = e.rejection_reason, rate = e.rate, mid_rate = e.mid_rate,
      converted_amount = e.converted_amount, fee = e.fee, ledger_transaction_id = e.ledger_transaction_id,
      transaction_id = e.transaction_id, executed_at = case when e.status = 'completed' then now() end, updated_at = now()
    from ${valuesOf('e', columns, rows)}
    where o.id = e.id`,
  );
}

/** The database clock, so the worker compares checked_at with the clock that wrote it. */
export async function databaseNow(db: Queryable): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`select now() as now`.execute(db);
  return rows[0]!.now;
}

export async function markChecked(db: Queryable, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('fx_orders')
    .set({ checked_at: sql<Date>`now()` })
    .where('id', 'in', ids)
    .execute();
}
