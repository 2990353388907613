import { sql, type ColumnType, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../db/client.js';
import type { Scope } from '../core/context.js';
import { scoped } from '../db/scoped.js';
import { uuidv7LowerBound, uuidv7Time } from '../lib/ids.js';
import type { OpsRole } from './roles.js';

/**
 * The operator console's own tables (operators, sessions, audit log), and its read model over
 * every business: the review queue, live payouts and the business list read across businesses,
 * which is the point of a platform operator's console (a business's rows are still read through
 * `scoped` wherever one business is concerned).
 */
export interface OpsOperatorsTable {
  id: string;
  email: string;
  role: OpsRole;
  password_hash: string | null;
  setup_token_hash: Buffer | null;
  setup_expires_at: Date | null;
  totp_secret_sealed: string | null;
  totp_pending_sealed: string | null;
  totp_last_step: ColumnType<string | null, string | null | undefined, string | null>;
  disabled_at: Date | null;
  created_at: ColumnType<Date, never, never>;
}

export interface OpsSessionsTable {
  id: string;
  token_hash: Buffer;
  operator_id: string;
  csrf_token: string;
  created_at: ColumnType<Date, never, never>;
  expires_at: Date;
}

export interface OpsAuditLogTable {
  id: string;
  at: ColumnType<Date, never, never>;
  operator_id: string | null;
  operator_email: string;
  action: string;
  target_type: string;
  target_id: string;
  tenant_id: string | null;
  environment: string | null;
  reason: string | null;
  detail: ColumnType<Record<string, unknown>, string | undefined, never>;
}

declare module '../db/types.js' {
  interface Database {
    ops_operators: OpsOperatorsTable;
    ops_sessions: OpsSessionsTable;
    ops_audit_log: OpsAuditLogTable;
  }
}

export type OperatorRow = Selectable<OpsOperatorsTable>;
export type AuditRow = Selectable<OpsAuditLogTable>;

export async function insertOperator(db: Queryable, row: Insertable<OpsOperatorsTable>) {
  await db.insertInto('ops_operators').values(row).execute();
}

export async function updateOperator(db: Queryable, id: string, patch: Updateable<OpsOperatorsTable>) {
  await db.updateTable('ops_operators').set(patch).where('id', '=', id).execute();
}

/**
 * Accepts a TOTP time step only when it is later than the last one accepted: two requests with
 * the same code race on this one conditional update and only one wins.
 */
export async function claimTotpStep(db: Queryable, id: string, step: number): Promise<boolean> {
  const result = await db
    .updateTable('ops_operators')
    .set({ totp_last_step: String(step) })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('totp_last_step', 'is', null), eb('totp_last_step', '<', String(step))]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function findOperatorByEmail(db: Queryable, email: string) {
  return db.selectFrom('ops_operators').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function findOperator(db: Queryable, id: string) {
  return db.selectFrom('ops_operators').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findOperatorBySetupToken(db: Queryable, hash: Buffer) {
  return db.selectFrom('ops_operators').selectAll().where('setup_token_hash', '=', hash).executeTakeFirst();
}

export async function listOperators(db: Queryable) {
  return db.selectFrom('ops_operators').selectAll().orderBy('email').execute();
}

export async function insertSession(db: Queryable, row: Insertable<OpsSessionsTable>) {
  await db.insertInto('ops_sessions').values(row).execute();
}

/** A live session with its operator (a disabled operator's sessions open nothing). */
export async function findSession(db: Queryable, hash: Buffer) {
  return db
    .selectFrom('ops_sessions')
    .innerJoin('ops_operators', 'ops_operators.id', 'ops_sessions.operator_id')
    .select([
      'ops_sessions.id',
      'ops_sessions.operator_id',
      'ops_sessions.csrf_token',
      'ops_operators.email',
      'ops_operators.role',
      'ops_operators.totp_secret_sealed',
    ])
    .where('ops_sessions.token_hash', '=', hash)
    .where('ops_sessions.expires_at', '>', new Date())
    .where('ops_operators.disabled_at', 'is', null)
    .executeTakeFirst();
}

export async function deleteSession(db: Queryable, id: string) {
  await db.deleteFrom('ops_sessions').where('id', '=', id).execute();
}

export async function deleteSessionsOf(db: Queryable, operatorId: string) {
  await db.deleteFrom('ops_sessions').where('operator_id', '=', operatorId).execute();
}

export async function insertAudit(db: Queryable, row: Insertable<OpsAuditLogTable>) {
  await db.insertInto('ops_audit_log').values(row).execute();
}

export interface AuditFilter {
  action?: string | undefined;
  target?: string | undefined;
  limit: number;
  before?: string | undefined;
}

export async function listAudit(db: Queryable, f: AuditFilter) {
  let q = db.selectFrom('ops_audit_log').selectAll().orderBy('id', 'desc').limit(f.limit);
  if (f.action) q = q.where('action', '=', f.action);
  if (f.target) q = q.where('target_id', '=', f.target);
  if (f.before) q = q.where('id', '<', f.before);
  return q.execute();
}

// ---------------------------------------------------------------------------------------------
// KYC review queue

export interface QueueFilter {
  tenantId?: string | undefined;
  environment?: 'live' | 'sandbox' | undefined;
  level?: 'basic' | 'intermediate' | undefined;
  /** Only cases waiting at least this many hours. */
  minAgeHours?: number | undefined;
  limit: number;
}

/** Live and sandbox cases waiting for a person, oldest first, across every business. */
export async function reviewQueue(db: Queryable, f: QueueFilter) {
  let q = db
    .selectFrom('kyc_cases')
    .innerJoin('customers', 'customers.id', 'kyc_cases.customer_id')
    .innerJoin('tenants', 'tenants.id', 'kyc_cases.tenant_id')
    .select([
      'kyc_cases.id',
      'kyc_cases.tenant_id',
      'kyc_cases.environment',
      'kyc_cases.customer_id',
      'kyc_cases.level',
      'kyc_cases.checks',
      'kyc_cases.updated_at',
      'kyc_cases.created_at',
      'customers.type',
      'customers.first_name',
      'customers.last_name',
      'customers.business_name',
      'tenants.name as tenant_name',
    ])
    .where('kyc_cases.status', '=', 'manual_review')
    .orderBy('kyc_cases.updated_at')
    .orderBy('kyc_cases.id')
    .limit(f.limit);
  // The operator's queue spans businesses; the business filter is a choice on the page, not a scope.
  // eslint-disable-next-line no-restricted-syntax
  if (f.tenantId) q = q.where('kyc_cases.tenant_id', '=', f.tenantId);
  // eslint-disable-next-line no-restricted-syntax
  if (f.environment) q = q.where('kyc_cases.environment', '=', f.environment);
  if (f.level) q = q.where('kyc_cases.level', '=', f.level);
  if (f.minAgeHours !== undefined) q = q.where('kyc_cases.updated_at', '<=', new Date(Date.now() - f.minAgeHours * 3_600_000));
  return q.execute();
}

/** One case by id, whichever business it belongs to (the page then reads the rest within its scope). */
export async function findCaseById(db: Queryable, id: string) {
  return db.selectFrom('kyc_cases').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function customerOf(db: Queryable, ctx: Scope, id: string) {
  return scoped(db, 'customers', ctx).selectAll().where('id', '=', id).executeTakeFirst();
}

export async function documentsOf(db: Queryable, ctx: Scope, customerId: string) {
  return scoped(db, 'kyc_documents', ctx)
    .select([
      'id',
      'doc_type',
      'doc_sub_type',
      'country',
      'first_name',
      'last_name',
      'number',
      'dob',
      'valid_until',
      'filename',
      'content_type',
      'size_bytes',
      'sha256',
      'created_at',
    ])
    .where('customer_id', '=', customerId)
    .orderBy('id')
    .execute();
}

/** A document's file, by id alone (the route checks the operator's role first). */
export async function documentContent(db: Queryable, id: string) {
  return db.selectFrom('kyc_documents').select(['id', 'tenant_id', 'content_type', 'content']).where('id', '=', id).executeTakeFirst();
}

export async function casesOfCustomer(db: Queryable, ctx: Scope, customerId: string) {
  return scoped(db, 'kyc_cases', ctx).selectAll().where('customer_id', '=', customerId).orderBy('id').execute();
}

/** The events of a resource (a customer, a transfer), oldest first. */
export async function eventsOf(db: Queryable, ctx: Scope, resourceId: string) {
  return scoped(db, 'events', ctx)
    .select(['id', 'event_type', 'created_at'])
    .where('event_group_id', '=', resourceId)
    .orderBy('id')
    .limit(200)
    .execute();
}

// ---------------------------------------------------------------------------------------------
// Payouts

export interface PayoutFilter {
  status?: string | undefined;
  environment: 'live' | 'sandbox';
  limit: number;
}

/** Payouts (transfers to an external account) across businesses, oldest first. */
export async function listPayouts(db: Queryable, f: PayoutFilter) {
  let q = db
    .selectFrom('transfers')
    .innerJoin('tenants', 'tenants.id', 'transfers.tenant_id')
    .leftJoin('rail_payouts', (j) =>
      j
        .onRef('rail_payouts.transfer_id', '=', 'transfers.id')
        .onRef('rail_payouts.tenant_id', '=', 'transfers.tenant_id')
        .onRef('rail_payouts.environment', '=', 'transfers.environment'),
    )
    .select([
      'transfers.id',
      'transfers.tenant_id',
      'transfers.status',
      'transfers.rail',
      'transfers.currency',
      'transfers.amount',
      'transfers.created_at',
      'transfers.updated_at',
      'tenants.name as tenant_name',
      'rail_payouts.connector',
      'rail_payouts.state as rail_state',
    ])
    .where('transfers.destination_type', '=', 'external_account')
    .orderBy('transfers.created_at')
    .orderBy('transfers.id')
    .limit(f.limit);
  // Live payouts of every business: the operations desk works across businesses.
  // eslint-disable-next-line no-restricted-syntax
  q = q.where('transfers.environment', '=', f.environment);
  if (f.status) q = q.where('transfers.status', '=', f.status as never);
  return q.execute();
}

/* eslint-disable no-restricted-syntax -- Live payouts of every business, counted together. */
export async function countPayoutsByStatus(db: Queryable, environment: string) {
  return db
    .selectFrom('transfers')
    .select(['status', sql<string>`count(*)`.as('n'), sql<Date>`min(created_at)`.as('oldest')])
    .where('destination_type', '=', 'external_account')
    .where('environment', '=', environment)
    .groupBy('status')
    .execute();
}
/* eslint-enable no-restricted-syntax */

/** A payout of any business by id (the operator console), through transfers_payout_id_idx (its predicate as a literal, which a generic plan needs): another transfer is not found. */
export async function findTransferById(db: Queryable, id: string) {
  return db
    .selectFrom('transfers')
    .selectAll()
    .where('destination_type', '=', sql.lit('external_account'))
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function railPayoutOf(db: Queryable, ctx: Scope, transferId: string) {
  return scoped(db, 'rail_payouts', ctx).selectAll().where('transfer_id', '=', transferId).executeTakeFirst();
}

/** Clocks of several API processes may disagree: the spans below are widened by this on each side. */
const CLOCK_MARGIN_MS = 60_000;

const idAt = (ms: number) => uuidv7LowerBound(new Date(ms));

/**
 * The ledger entries of a payout's postings (the ledger transactions that name it), found without
 * reading the ledger's history: nothing indexes a ledger transaction's reference, and a new index
 * would be paid on every posting.
 * - Each posting with entries that a payout makes on its own (its holds posted, the return) has
 *   one on its source account, between the payout's creation and its last change (each moves
 *   `updated_at`): that account's history over that span (`ledger_entries_account_history_idx`).
 * - An international payout's FX leg (`payout_fx`) moves only system accounts; it is posted in
 *   the settlement's transaction, right after the posting the transfer names
 *   (`ledger_transaction_id`): the ledger transactions of the span after that one.
 */
export async function ledgerEntriesOf(
  db: Queryable,
  ctx: Scope,
  payout: { id: string; source_id: string; created_at: Date; updated_at: Date; ledger_transaction_id: string | null },
) {
  const onSource = scoped(db, 'ledger_entries', ctx)
    .innerJoin('ledger_transactions', 'ledger_transactions.id', 'ledger_entries.transaction_id')
    .select('ledger_entries.transaction_id')
    .where('ledger_entries.account_id', '=', payout.source_id)
    .where('ledger_entries.id', '>=', idAt(payout.created_at.getTime() - CLOCK_MARGIN_MS))
    .where('ledger_entries.id', '<', idAt(payout.updated_at.getTime() + CLOCK_MARGIN_MS))
    .where('ledger_transactions.reference', '=', payout.id);
  const settled = payout.ledger_transaction_id;
  const postings = settled
    ? onSource.union(
        scoped(db, 'ledger_transactions', ctx)
          .select('id as transaction_id')
          .where('id', '>=', idAt(uuidv7Time(settled) - CLOCK_MARGIN_MS))
          .where('id', '<', idAt(uuidv7Time(settled) + CLOCK_MARGIN_MS))
          .where('reference', '=', payout.id),
      )
    : onSource;
  return scoped(db, 'ledger_entries', ctx)
    .innerJoin('ledger_transactions', 'ledger_transactions.id', 'ledger_entries.transaction_id')
    .innerJoin('ledger_accounts', 'ledger_accounts.id', 'ledger_entries.account_id')
    .select([
      'ledger_entries.id',
      'ledger_entries.transaction_id',
      'ledger_transactions.kind',
      'ledger_entries.account_id',
      'ledger_accounts.system_role',
      'ledger_entries.currency',
      'ledger_entries.amount',
      'ledger_entries.balance_after',
      'ledger_entries.created_at',
    ])
    .where('ledger_entries.transaction_id', 'in', postings)
    .orderBy('ledger_entries.id')
    .execute();
}

// ---------------------------------------------------------------------------------------------
// Businesses

export async function listBusinesses(db: Queryable, limit: number) {
  return db
    .selectFrom('tenants')
    .select(['id', 'name', 'created_at', 'live_frozen_at', 'live_frozen_reason'])
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
}

export async function findBusiness(db: Queryable, id: string) {
  return db.selectFrom('tenants').selectAll().where('id', '=', id).executeTakeFirst();
}

/* eslint-disable no-restricted-syntax -- The keys of one business in both environments: filtered by tenant alone on purpose. */
/** Keys still in use per environment. */
export async function activeKeyCounts(db: Queryable, tenantId: string) {
  return db
    .selectFrom('api_keys')
    .select(['environment', 'kind', sql<string>`count(*)`.as('n')])
    .where('tenant_id', '=', tenantId)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
    .groupBy(['environment', 'kind'])
    .execute();
}
/* eslint-enable no-restricted-syntax */

/* eslint-disable no-restricted-syntax -- Dashboard logins belong to a business in every environment. */
export async function usersOf(db: Queryable, tenantId: string) {
  return db
    .selectFrom('dashboard_users')
    .select(['id', 'email', 'role', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .orderBy('email')
    .execute();
}
/* eslint-enable no-restricted-syntax */

export async function setLiveFrozen(db: Queryable, tenantId: string, frozen: { at: Date; reason: string } | null) {
  const result = await db
    .updateTable('tenants')
    .set({ live_frozen_at: frozen?.at ?? null, live_frozen_reason: frozen?.reason ?? null })
    .where('id', '=', tenantId)
    .where('live_frozen_at', frozen ? 'is' : 'is not', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The bank files a payout went into, with the bank's status of it in each (pain.002, camt returns). */
export async function bankFilesOfPayout(db: Queryable, transferId: string) {
  return db
    .selectFrom('bank_file_payouts as p')
    .innerJoin('bank_files as f', 'f.id', 'p.file_id')
    .select([
      'f.id as file_id',
      'f.filename',
      'f.message_id',
      'f.status as file_status',
      'f.delivered_at',
      'p.end_to_end_id',
      'p.status',
      'p.reason',
      'p.updated_at',
    ])
    .where('p.transfer_id', '=', transferId)
    .orderBy('f.created_at')
    .execute();
}

/** Entries the bank reported about a payout (camt.054 / camt.053 lines matched to it), oldest first. */
export async function bankEntriesOfPayout(db: Queryable, transferId: string) {
  return db
    .selectFrom('bank_entries as e')
    .innerJoin('bank_files as f', 'f.id', 'e.file_id')
    .select([
      'e.entry_key',
      'e.direction',
      'e.amount',
      'e.currency',
      'e.booking_date',
      'e.outcome',
      'e.created_at',
      'f.id as file_id',
      'f.kind',
      'f.filename',
    ])
    .where('e.transfer_id', '=', transferId)
    .orderBy('e.created_at')
    .execute();
}

/** The entries imported from one bank file (camt.054 / camt.053), in file order. */
export async function bankEntriesOfFile(db: Queryable, fileId: string) {
  return db
    .selectFrom('bank_entries')
    .select(['id', 'entry_key', 'direction', 'amount', 'currency', 'booking_date', 'outcome', 'account_id', 'transfer_id'])
    .where('file_id', '=', fileId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1000)
    .execute();
}
