import type { ColumnType, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { Queryable } from '../../db/client.js';
import { write, type Writer } from '../../db/write-set.js';
import { insertPerShape } from '../../db/compiled.js';
import { valuesOf } from '../../db/values.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageExtra } from '../../db/pagination.js';
import type { ListTransfersQuery, TransferStatus } from './schema.js';
import { findScoped, scoped, scopedUpdate, transition } from '../../db/scoped.js';

export interface TransfersTable {
  id: string;
  tenant_id: string;
  environment: string;
  client_reference: string | null;
  description: ColumnType<string, string | undefined, string>;
  customer_id: string | null;
  destination_customer_id: string | null;
  source_type: string;
  source_id: string;
  destination_type: string;
  destination_id: string | null;
  rail: string | null;
  currency: string;
  amount: bigint;
  fee: ColumnType<bigint, bigint | undefined, bigint>;
  local_amount: bigint | null;
  local_currency: string | null;
  rate: string | null;
  status: TransferStatus;
  failure_reason: string | null;
  ledger_transaction_id: string | null;
  transaction_id: string | null;
  hold_id: string | null;
  metadata: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    transfers: TransfersTable;
  }
}

export type TransferRow = Selectable<TransfersTable>;

const insertTransferRows = insertPerShape('transfers');

/** Many transfers in one statement (a batch); metadata is serialized here. */
export async function insertTransfers(to: Writer, rows: TransferRow[]) {
  if (rows.length === 0) return;
  await write(to, (db) =>
    insertTransferRows(
      db,
      rows.map((r) => ({ ...r, metadata: JSON.stringify(r.metadata) })),
    ),
  );
}

export async function findTransfer(db: Queryable, ctx: Scope, id: string) {
  return findScoped(db, 'transfers', ctx, id);
}

export async function listTransfers(
  db: Queryable,
  ctx: Scope,
  query: ListTransfersQuery,
  extra?: PageExtra<unknown>,
): Promise<Page<TransferRow>> {
  let base = scoped(db, 'transfers', ctx);
  if (query.status) {
    base = base.where('status', '=', query.status);
    // The status index holds only the transfers that are not completed (migration 1263), and the
    // planner uses a partial index only when the query states its predicate as a literal. A
    // completed filter walks the list's index, where most rows match.
    if (query.status !== 'completed') base = base.where('status', '<>', sql.lit('completed'));
  }
  if (query.account_id) {
    const id = query.account_id;
    base = base.where((eb) => eb.or([eb('source_id', '=', id), eb('destination_id', '=', id)]));
  }
  if (query.customer_id) {
    const id = query.customer_id;
    base = base.where((eb) => eb.or([eb('customer_id', '=', id), eb('destination_customer_id', '=', id)]));
  }
  return paginate<TransferRow>(db, base, 'transfers.id', query, (qb) => qb.selectAll('transfers'), 'desc', extra);
}

/** The transfer, row-locked until the caller commits (payout outcomes serialize on it). */
export async function findTransferForUpdate(db: Queryable, ctx: Scope, id: string) {
  return findScoped(db, 'transfers', ctx, id, 'update');
}

/**
 * The predicate of transfers_payout_id_idx as a literal: a generic plan uses a partial index only
 * when the query states its predicate so (a parameter could be anything).
 */
const payoutsOnly = sql.lit('external_account');

/**
 * Payouts among `ids` (claimed by a job, of any business), locked in ascending id for a batch that
 * ends them. By id alone through the payouts' own index (transfers_payout_id_idx, migration 1271).
 */
export async function lockTransfers(db: Queryable, ids: string[]): Promise<TransferRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('transfers')
    .selectAll()
    .where('destination_type', '=', payoutsOnly)
    .where('id', 'in', [...new Set(ids)].sort())
    .orderBy('id')
    .forUpdate()
    .execute();
}

/**
 * Completes many processing payouts locked in this transaction (lockTransfers) in one statement,
 * each with its ledger transaction, as moveTransfer does one. One part of a batch's writes.
 */
export async function completePayouts(to: Writer, rows: { id: string; ledger_transaction_id: string }[]): Promise<void> {
  if (rows.length === 0) return;
  await write(
    to,
    () => sql`
    update transfers t set status = 'completed', ledger_transaction_id = u.l, updated_at = now()
    from ${valuesOf(
      'u',
      { id: 'uuid', l: 'uuid' },
      rows.map((r) => [r.id, r.ledger_transaction_id]),
    )}
    where t.id = u.id and t.status = 'processing'`,
  );
}

/**
 * Moves many pending payouts locked in this transaction (lockTransfers) to `processing` in one
 * statement, stamped `at`, as moveTransfer does one. One part of the dispatch job's writes.
 */
export async function markProcessing(to: Writer, rows: { id: string }[], at: Date): Promise<void> {
  if (rows.length === 0) return;
  await write(
    to,
    () => sql`
    update transfers t set status = 'processing', updated_at = ${at}
    from ${valuesOf(
      'u',
      { id: 'uuid' },
      rows.map((r) => [r.id]),
    )}
    where t.id = u.id and t.status = 'pending'`,
  );
}

/** Moves a transfer from `from` to a new status, at most once (the status condition guards it). */
export async function moveTransfer(
  db: Queryable,
  ctx: Scope,
  id: string,
  from: TransferStatus[],
  patch: { status: TransferStatus; failure_reason?: string | null; ledger_transaction_id?: string | null },
) {
  return transition(db, 'transfers', ctx, id, from, { ...patch, updated_at: new Date() });
}

/**
 * Pending payouts not yet handed to their rail, oldest first, across businesses (dispatch job).
 * A payout waiting for approval (maker-checker, `payout.approval` in its metadata) is not handed
 * to its rail before it is approved.
 */
export async function pendingPayouts(db: Queryable, limit: number) {
  return db
    .selectFrom('transfers')
    .selectAll()
    .where('status', '=', 'pending')
    .where('destination_type', '=', 'external_account')
    .where(sql<boolean>`coalesce(metadata->'payout'->>'approval', '') <> 'waiting_approval'`)
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** Records a payout's approval state in its metadata (`payout.approval`), on the caller's locked row. */
export async function setPayoutApproval(db: Queryable, ctx: Scope, id: string, state: 'approved' | 'rejected' | 'expired') {
  await scopedUpdate(db, 'transfers', ctx)
    .set({ metadata: sql`jsonb_set(metadata, '{payout,approval}', to_jsonb(${state}::text))`, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

export const spendingKey = (ctx: Scope, customerId: string) => `transfer-limits:${ctx.tenantId}:${ctx.environment}:${customerId}`;

/** Takes the spending locks of `keys` in one statement, in key order (batches cannot deadlock on them). */
export async function lockSpendingKeys(db: Queryable, keys: string[]) {
  if (keys.length > 0) await db.executeQuery(lockSpendingKeysStatement(db, keys));
}

/** lockSpendingKeys (of at least one key) as a statement its caller sends (db/pipeline.ts). */
export function lockSpendingKeysStatement(db: Queryable, keys: string[]) {
  const sorted = [...new Set(keys)].sort();
  return sql`select pg_advisory_xact_lock(hashtextextended(k, 0)) from (select unnest(${sorted}::text[]) as k order by k) s`.compile(db);
}

/** Payouts by id whatever their business (the bank file cut names payouts of many businesses), through transfers_payout_id_idx. */
export async function findTransfersByIds(db: Queryable, ids: string[]): Promise<TransferRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('transfers').selectAll().where('destination_type', '=', payoutsOnly).where('id', 'in', ids).execute();
}
