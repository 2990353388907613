import { sql, type ColumnType, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageExtra } from '../../db/pagination.js';
import { uuidv7LowerBound } from '../../lib/ids.js';
import type { ListApplicationsQuery, ListAuthorizationsQuery, ListCardsQuery } from './schema.js';
import { findScoped, scoped, scopedUpdate, type Lock } from '../../db/scoped.js';
import type { Timeline } from '../../core/clock.js';
import { inTimeline } from '../../db/timeline.js';

type Json<T> = ColumnType<T, string, string>;
type Created = ColumnType<Date, never, never>;
type Updated = ColumnType<Date, never, Date>;

export interface BillingAddress {
  street: string;
  city: string;
  state: string;
  postal_code: string;
  country_iso_code: string;
}

export interface ShippingAddress {
  address_line1: string;
  address_line2?: string;
  city: string;
  state?: string;
  postal_code: string;
  country_code: string;
  phone_number: string;
}

export interface CardApplicationsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  account_id: string;
  annual_remuneration: bigint;
  estimated_monthly_limit: bigint;
  currency: string;
  ip_address: string;
  status: string;
  created_at: Created;
  updated_at: Updated;
}

export interface CardsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  card_type: 'virtual' | 'physical';
  currency: string;
  network: string;
  name_on_card: string;
  last4: string;
  expiry_month: number;
  expiry_year: number;
  pan_sealed: string;
  cvv_sealed: string;
  pin_sealed: string;
  status: string;
  controls_activated: ColumnType<boolean, boolean | undefined, boolean>;
  single_transaction_limit: bigint | null;
  daily_limit: bigint | null;
  monthly_limit: bigint | null;
  allowed_categories: ColumnType<string[], string | undefined, string>;
  blocked_categories: ColumnType<string[], string | undefined, string>;
  billing_address: Json<BillingAddress>;
  shipping_address: Json<ShippingAddress | null>;
  shipping_method: string | null;
  fulfilment_status: string | null;
  activated_at: Date | null;
  created_at: Created;
  updated_at: Updated;
}

export interface CardAuthorizationsTable {
  id: string;
  tenant_id: string;
  environment: string;
  card_id: string;
  currency: string;
  amount: bigint;
  captured_amount: bigint | null;
  merchant_name: string;
  merchant_category: string | null;
  status: string;
  decline_reason: string | null;
  hold_id: string | null;
  expires_at: Date | null;
  created_at: Created;
  updated_at: Updated;
}

declare module '../../db/types.js' {
  interface Database {
    card_applications: CardApplicationsTable;
    cards: CardsTable;
    card_authorizations: CardAuthorizationsTable;
  }
}

export type ApplicationRow = Selectable<CardApplicationsTable>;
export type CardRow = Selectable<CardsTable>;
export type AuthorizationRow = Selectable<CardAuthorizationsTable>;

// ---------- applications ----------

export async function insertApplication(db: Queryable, row: Insertable<CardApplicationsTable>) {
  await db.insertInto('card_applications').values(row).execute();
}

export async function findApplication(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return findScoped(db, 'card_applications', ctx, id, lock);
}

export async function setApplicationStatus(db: Queryable, ctx: Scope, id: string, status: string) {
  await scopedUpdate(db, 'card_applications', ctx).set({ status, updated_at: new Date() }).where('id', '=', id).execute();
}

export async function listApplications(db: Queryable, ctx: Scope, query: ListApplicationsQuery): Promise<Page<ApplicationRow>> {
  let base = scoped(db, 'card_applications', ctx);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  if (query.status) base = base.where('status', '=', query.status);
  return paginate<ApplicationRow>(db, base, 'card_applications.id', query, (qb) => qb.selectAll());
}

// ---------- cards ----------

export async function insertCard(db: Queryable, row: Insertable<CardsTable>) {
  await db.insertInto('cards').values(row).execute();
}

export async function findCard(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return findScoped(db, 'cards', ctx, id, lock);
}

/** A business's cards by id, in one statement (a batch of withdrawals); unknown ids are absent. */
export function findCardsQuery(db: Queryable, ctx: Scope, ids: string[]) {
  return scoped(db, 'cards', ctx)
    .where('id', 'in', [...new Set(ids)])
    .selectAll();
}

export async function findCards(db: Queryable, ctx: Scope, ids: string[]): Promise<CardRow[]> {
  return ids.length === 0 ? [] : findCardsQuery(db, ctx, ids).execute();
}

export async function updateCard(db: Queryable, ctx: Scope, id: string, patch: Updateable<CardsTable>) {
  await scopedUpdate(db, 'cards', ctx)
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

export async function listCards(db: Queryable, ctx: Scope, query: ListCardsQuery, extra?: PageExtra<unknown>): Promise<Page<CardRow>> {
  let base = scoped(db, 'cards', ctx);
  if (query.customer_id) base = base.where('customer_id', '=', query.customer_id);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.card_type) base = base.where('card_type', '=', query.card_type);
  if (query.currency) base = base.where('currency', '=', query.currency);
  return paginate<CardRow>(db, base, 'cards.id', query, (qb) => qb.selectAll('cards'), 'desc', extra);
}

// ---------- authorizations ----------

export async function insertAuthorization(db: Queryable, row: Insertable<CardAuthorizationsTable>) {
  await db.insertInto('card_authorizations').values(row).execute();
}

export async function findAuthorization(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return findScoped(db, 'card_authorizations', ctx, id, lock);
}

export async function settleAuthorization(
  db: Queryable,
  id: string,
  patch: { status: 'captured' | 'reversed' | 'expired'; captured_amount?: bigint },
) {
  await db
    .updateTable('card_authorizations')
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

/**
 * What the card has spent since `since`: approved holds count in full, captures at their captured
 * amount; declined, reversed and expired authorizations spent nothing.
 */
export async function spentSince(db: Queryable, ctx: Scope, cardId: string, since: Date): Promise<bigint> {
  const row = await scoped(db, 'card_authorizations', ctx)
    .select(
      sql<string>`coalesce(sum(case status when 'approved' then amount when 'captured' then captured_amount else 0 end), 0)::text`.as(
        'spent',
      ),
    )
    .where('card_id', '=', cardId)
    // Ids are UUIDv7: the id bound is the time bound, and one index serves list and limits.
    .where('id', '>=', uuidv7LowerBound(since))
    .executeTakeFirst();
  return BigInt(row?.spent ?? '0');
}

export async function listAuthorizations(
  db: Queryable,
  ctx: Scope,
  cardId: string,
  query: ListAuthorizationsQuery,
): Promise<Page<AuthorizationRow>> {
  let base = scoped(db, 'card_authorizations', ctx).where('card_id', '=', cardId);
  if (query.status) base = base.where('status', '=', query.status);
  return paginate<AuthorizationRow>(db, base, 'card_authorizations.id', query, (qb) => qb.selectAll());
}

/** Approved authorizations past their expiry, claimed so parallel workers never take the same one. */
export async function claimExpiredAuthorizations(db: Queryable, limit: number, skipLocked: boolean, t: Timeline) {
  let q = db
    .selectFrom('card_authorizations')
    .selectAll()
    .where('status', '=', 'approved')
    .where('expires_at', '<', t.now ?? new Date())
    .where(inTimeline(t, 'card_authorizations'))
    .orderBy('expires_at')
    .limit(limit)
    .forUpdate();
  if (skipLocked) q = q.skipLocked();
  return q.execute();
}
