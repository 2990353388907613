import type { Timeline } from '../../core/clock.js';
import { inTimeline, nowOf } from '../../db/timeline.js';
import { sql, type ColumnType, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page } from '../../db/pagination.js';
import type { ListCollectionsQuery, ListSavedCardsQuery } from './schema.js';
import { findScoped, locked, scoped, scopedUpdate, type Lock } from '../../db/scoped.js';
import { writeTogether, type Writer } from '../../db/write-set.js';

export interface BankInstructions {
  account_number: string;
  account_name: string | null;
  bank_name: string | null;
}

export type CollectionStatus = 'pending' | 'completed' | 'failed' | 'expired';
export type Method = 'card' | 'bank_transfer' | 'mobile_money';

export interface CollectionsTable {
  id: string;
  tenant_id: string;
  environment: string;
  kind: 'collection' | 'payment_intent';
  customer_id: string;
  client_customer_id: string | null;
  client_reference: string | null;
  method: Method;
  methods: ColumnType<string[], string, never>;
  amount: bigint;
  currency: string;
  country: string;
  destination_account_id: string;
  status: ColumnType<CollectionStatus, CollectionStatus | undefined, CollectionStatus>;
  detailed_status: ColumnType<string, string | undefined, string>;
  fee: ColumnType<bigint, bigint | undefined, bigint>;
  failure_code: string | null;
  failure_reason: string | null;
  payment_reference: string | null;
  instruction: string | null;
  bank_instructions: ColumnType<BankInstructions | null, string | null, never>;
  payer_phone: string | null;
  checkout_token: string | null;
  saved_card_id: string | null;
  ledger_transaction_id: string | null;
  transaction_id: string | null;
  metadata: ColumnType<Record<string, unknown>, string | undefined, never>;
  expires_at: Date;
  completed_at: Date | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export interface SavedCardsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string | null;
  client_customer_id: string | null;
  card_token: string;
  card_sealed: string;
  card_last4: string;
  card_brand: string;
  card_exp_month: string;
  card_exp_year: string;
  is_default: ColumnType<boolean, boolean | undefined, boolean>;
  billing_info: ColumnType<Record<string, unknown> | null, string | null, string | null>;
  deleted_at: ColumnType<Date | null, never, Date>;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    collections: CollectionsTable;
    saved_cards: SavedCardsTable;
  }
}

export type CollectionRow = Selectable<CollectionsTable>;
export type SavedCardRow = Selectable<SavedCardsTable>;

export async function insertCollection(db: Queryable, row: Insertable<CollectionsTable>) {
  await db.insertInto('collections').values(row).execute();
}

export async function findCollection(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return findScoped(db, 'collections', ctx, id, lock);
}

/** The hosted checkout page has no API key: it finds the collection by id, then checks the session token. */
export async function findCollectionById(db: Queryable, id: string, lock?: Lock) {
  return locked(db.selectFrom('collections').selectAll().where('id', '=', id), lock).executeTakeFirst();
}

/** A pending bank-transfer collection into `accountId` waiting for this payment reference. */
export async function findByPaymentReference(db: Queryable, ctx: Scope, accountId: string, reference: string) {
  return scoped(db, 'collections', ctx)
    .selectAll()
    .where('payment_reference', '=', reference)
    .where('destination_account_id', '=', accountId)
    .forUpdate()
    .executeTakeFirst();
}

export async function listCollections(db: Queryable, ctx: Scope, query: ListCollectionsQuery): Promise<Page<CollectionRow>> {
  let base = scoped(db, 'collections', ctx);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  if (query.method) base = base.where('method', '=', query.method);
  return paginate<CollectionRow>(db, base, 'collections.id', query, (qb) => qb.selectAll());
}

/** Collections of one business and environment, locked (ascending id) for a batch that ends them. */
export async function lockCollections(db: Queryable, ctx: Scope, ids: string[]): Promise<CollectionRow[]> {
  if (ids.length === 0) return [];
  return lockCollectionsQuery(db, ctx, ids).execute();
}

/** lockCollections' statement, for a batch that sends it with others (lifecycle.ts lockCollectionsStatement); `ids` not empty. */
export function lockCollectionsQuery(db: Queryable, ctx: Scope, ids: string[]) {
  return scoped(db, 'collections', ctx)
    .selectAll()
    .where('id', 'in', [...new Set(ids)].sort())
    .orderBy('id')
    .forUpdate();
}

/**
 * Ends pending collections the caller locked and checked: one UPDATE each, sent with the
 * caller's other writes (a write set). The status condition stays as a guard.
 */
export async function endCollections(
  to: Writer,
  ends: { ctx: Scope; id: string; patch: Updateable<CollectionsTable> & { status: CollectionStatus; updated_at: Date } }[],
): Promise<void> {
  await writeTogether(to, (db) =>
    ends.map(({ ctx, id, patch }) => scopedUpdate(db, 'collections', ctx).set(patch).where('id', '=', id).where('status', '=', 'pending')),
  );
}

/** Pending collections past their expiry, across the timeline's businesses, locked for the expiry job. */
export async function dueForExpiry(db: Queryable, limit: number, t: Timeline) {
  const result = await sql<{ id: string; tenant_id: string; environment: string }>`
    select id, tenant_id, environment from collections
    where status = 'pending' and expires_at <= ${nowOf(t)} and ${inTimeline(t, 'collections')}
    order by expires_at limit ${limit}
    for update skip locked`.execute(db);
  return result.rows;
}

export async function insertSavedCard(db: Queryable, row: Insertable<SavedCardsTable>) {
  await db.insertInto('saved_cards').values(row).execute();
}

export async function findSavedCard(db: Queryable, ctx: Scope, id: string) {
  return scoped(db, 'saved_cards', ctx).selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function findSavedCardByToken(db: Queryable, ctx: Scope, token: string) {
  return scoped(db, 'saved_cards', ctx).selectAll().where('card_token', '=', token).where('deleted_at', 'is', null).executeTakeFirst();
}

/** The saved cards of one business and environment with these tokens (a batch of charges). */
export async function findSavedCardsByTokens(db: Queryable, ctx: Scope, tokens: string[]): Promise<SavedCardRow[]> {
  if (tokens.length === 0) return [];
  return savedCardsByTokensQuery(db, ctx, tokens).execute();
}

/** findSavedCardsByTokens' statement, for a batch that sends it with others; `tokens` not empty. */
export function savedCardsByTokensQuery(db: Queryable, ctx: Scope, tokens: string[]) {
  return scoped(db, 'saved_cards', ctx)
    .selectAll()
    .where('card_token', 'in', [...new Set(tokens)])
    .where('deleted_at', 'is', null);
}

export async function hasSavedCards(db: Queryable, ctx: Scope, customerId: string) {
  const row = await scoped(db, 'saved_cards', ctx)
    .select('id')
    .where('customer_id', '=', customerId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

export async function listSavedCards(db: Queryable, ctx: Scope, query: ListSavedCardsQuery): Promise<Page<SavedCardRow>> {
  let base = scoped(db, 'saved_cards', ctx).where('deleted_at', 'is', null);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  return paginate<SavedCardRow>(db, base, 'saved_cards.id', query, (qb) => qb.selectAll());
}

/** Soft-deletes a saved card of this business and environment; false when it has none by that id. */
export async function deleteSavedCard(db: Queryable, ctx: Scope, id: string): Promise<boolean> {
  const found = await scoped(db, 'saved_cards', ctx).select(['id', 'deleted_at']).where('id', '=', id).forUpdate().executeTakeFirst();
  if (!found) return false;
  if (found.deleted_at === null) {
    await db.updateTable('saved_cards').set({ deleted_at: new Date() }).where('id', '=', id).execute();
  }
  return true;
}
