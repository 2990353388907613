import { sql, type ColumnType, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Environment } from '../../core/context.js';

/**
 * The operator's bank tables (migration 1120): connections, files both ways, the payouts in each
 * outbound file, every imported entry (once per bank reference), the exceptions queue and the
 * statement reconciliations. They belong to the platform, not to one business.
 */
export interface TransportConfig {
  /** folder: where files are written for the bank and read from it. */
  outbox?: string;
  inbox?: string;
  /** sftp: the bank's host-to-host endpoint, with the platform's private key (a file path). */
  host?: string;
  port?: number;
  username?: string;
  private_key_path?: string;
  /** The server's host key fingerprint (SHA256:...), checked on every connection when set. */
  host_key_sha256?: string;
  remote_outbox?: string;
  remote_inbox?: string;
}

export interface BankConnectionsTable {
  id: string;
  environment: Environment;
  name: string;
  account_name: string;
  iban: string | null;
  account_number: string | null;
  bic: string | null;
  bank_code: string | null;
  currency: string;
  rails: ColumnType<string[], string, string>;
  transport: 'folder' | 'sftp';
  transport_config: ColumnType<TransportConfig, string, string>;
  status: ColumnType<'active' | 'disabled', 'active' | 'disabled' | undefined, 'active' | 'disabled'>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export type FileKind = 'pain.001' | 'pain.002' | 'camt.053' | 'camt.054';

export interface BankFilesTable {
  id: string;
  connection_id: string;
  direction: 'out' | 'in';
  kind: FileKind;
  message_id: string;
  filename: string;
  checksum: string;
  size: ColumnType<bigint, bigint | number, never>;
  status: 'created' | 'delivered' | 'imported';
  content: string | null;
  summary: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: ColumnType<Date, never, never>;
  delivered_at: Date | null;
}

export type FilePayoutStatus = 'queued' | 'submitted' | 'accepted' | 'rejected' | 'returned';

export interface BankFilePayoutsTable {
  transfer_id: string;
  tenant_id: string;
  environment: string;
  file_id: string;
  end_to_end_id: string;
  amount: bigint;
  currency: string;
  status: ColumnType<FilePayoutStatus, FilePayoutStatus | undefined, FilePayoutStatus>;
  reason: string | null;
  updated_at: ColumnType<Date, never, Date>;
}

export interface BankEntriesTable {
  id: string;
  connection_id: string;
  entry_key: string;
  file_id: string;
  direction: 'credit' | 'debit';
  amount: bigint;
  currency: string;
  booking_date: string | null;
  outcome: string;
  tenant_id: string | null;
  environment: string | null;
  account_id: string | null;
  transfer_id: string | null;
  details: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: ColumnType<Date, never, never>;
}

export interface BankExceptionsTable {
  id: string;
  connection_id: string;
  entry_id: string;
  direction: 'credit' | 'debit';
  amount: bigint;
  currency: string;
  payer_name: string | null;
  creditor_account: string | null;
  reference: string | null;
  reason: string;
  status: ColumnType<'open' | 'assigned' | 'returned', 'open' | undefined, 'assigned' | 'returned'>;
  tenant_id: string | null;
  account_id: string | null;
  resolved_note: string | null;
  created_at: ColumnType<Date, never, never>;
  resolved_at: Date | null;
}

export interface BankReconciliationsTable {
  id: string;
  connection_id: string;
  file_id: string;
  statement_id: string;
  statement_date: string;
  currency: string;
  bank_balance: bigint;
  ledger_balance: bigint;
  difference: bigint;
  status: 'agreed' | 'break';
  explanation: ColumnType<unknown[], string, string>;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    bank_connections: BankConnectionsTable;
    bank_files: BankFilesTable;
    bank_file_payouts: BankFilePayoutsTable;
    bank_entries: BankEntriesTable;
    bank_exceptions: BankExceptionsTable;
    bank_reconciliations: BankReconciliationsTable;
  }
}

export type ConnectionRow = Selectable<BankConnectionsTable>;
export type FileRow = Selectable<BankFilesTable>;
export type FilePayoutRow = Selectable<BankFilePayoutsTable>;
export type EntryRow = Selectable<BankEntriesTable>;
export type ExceptionRow = Selectable<BankExceptionsTable>;
export type ReconciliationRow = Selectable<BankReconciliationsTable>;

export async function insertConnection(db: Queryable, row: Insertable<BankConnectionsTable>) {
  return db.insertInto('bank_connections').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listConnections(db: Queryable) {
  return db.selectFrom('bank_connections').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function findConnection(db: Queryable, id: string, lock?: 'update') {
  const q = db.selectFrom('bank_connections').selectAll().where('id', '=', id);
  return (lock ? q.forUpdate() : q).executeTakeFirst();
}

export async function setConnectionStatus(db: Queryable, id: string, status: 'active' | 'disabled') {
  return db.updateTable('bank_connections').set({ status, updated_at: new Date() }).where('id', '=', id).returningAll().executeTakeFirst();
}

/** Payouts of the connection's environment and currency handed to the live rail and in no file yet, locked. */
export async function unfiledPayouts(db: Queryable, c: ConnectionRow, connectors: string[], limit: number) {
  // eslint-disable-next-line no-restricted-syntax -- a connection's claim across every business of its environment
  const result = await sql<{
    tenant_id: string;
    environment: string;
    transfer_id: string;
    rail: string;
    amount: bigint;
    currency: string;
    payee: unknown;
    created_at: Date;
  }>`
    select r.tenant_id, r.environment, r.transfer_id, r.rail, r.amount, r.currency, r.payee, r.created_at
    from rail_payouts r
    where r.environment = ${c.environment} and r.currency = ${c.currency} and r.state = 'submitted'
      and r.connector in (${sql.join(connectors)}) and r.rail in (${sql.join(c.rails)})
      and not exists (select 1 from bank_file_payouts p where p.transfer_id = r.transfer_id)
    order by r.created_at, r.id limit ${limit}
    for update of r skip locked`.execute(db);
  return result.rows.map((row) => ({ ...row, amount: BigInt(row.amount as unknown as string) }));
}

export async function insertFile(db: Queryable, row: Insertable<BankFilesTable>) {
  return db.insertInto('bank_files').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function insertFilePayouts(db: Queryable, rows: Insertable<BankFilePayoutsTable>[]) {
  if (rows.length > 0) await db.insertInto('bank_file_payouts').values(rows).execute();
}

export async function undeliveredFiles(db: Queryable, connectionId: string) {
  return db
    .selectFrom('bank_files')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .where('status', '=', 'created')
    .orderBy('id')
    .execute();
}

export async function markDelivered(db: Queryable, fileId: string) {
  const file = await db
    .updateTable('bank_files')
    .set({ status: 'delivered', delivered_at: new Date() })
    .where('id', '=', fileId)
    .where('status', '=', 'created')
    .returningAll()
    .executeTakeFirst();
  if (file) {
    await db
      .updateTable('bank_file_payouts')
      .set({ status: 'submitted', updated_at: new Date() })
      .where('file_id', '=', fileId)
      .where('status', '=', 'queued')
      .execute();
  }
  return file;
}

export async function findFile(db: Queryable, id: string) {
  return db.selectFrom('bank_files').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findFileByMessage(db: Queryable, connectionId: string, direction: 'in' | 'out', kind: FileKind, messageId: string) {
  return db
    .selectFrom('bank_files')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .where('direction', '=', direction)
    .where('kind', '=', kind)
    .where('message_id', '=', messageId)
    .executeTakeFirst();
}

export async function listFiles(db: Queryable, connectionId: string | undefined, limit: number) {
  let q = db
    .selectFrom('bank_files')
    .select([
      'id',
      'connection_id',
      'direction',
      'kind',
      'message_id',
      'filename',
      'checksum',
      'size',
      'status',
      'summary',
      'created_at',
      'delivered_at',
    ])
    .orderBy('id', 'desc')
    .limit(limit);
  if (connectionId) q = q.where('connection_id', '=', connectionId);
  return q.execute();
}

export async function payoutsOfFile(db: Queryable, fileId: string) {
  return db.selectFrom('bank_file_payouts').selectAll().where('file_id', '=', fileId).orderBy('end_to_end_id').execute();
}

export async function findFilePayoutByE2E(db: Queryable, endToEndId: string) {
  return db.selectFrom('bank_file_payouts').selectAll().where('end_to_end_id', '=', endToEndId).executeTakeFirst();
}

export async function setFilePayoutStatus(db: Queryable, transferId: string, status: FilePayoutStatus, reason: string | null) {
  await db.updateTable('bank_file_payouts').set({ status, reason, updated_at: new Date() }).where('transfer_id', '=', transferId).execute();
}

/** Claims an entry key once: undefined when it was imported before (the entry is skipped). */
export async function claimEntry(db: Queryable, row: Insertable<BankEntriesTable>) {
  return db
    .insertInto('bank_entries')
    .values(row)
    .onConflict((oc) => oc.columns(['connection_id', 'entry_key']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

export async function setEntryOutcome(
  db: Queryable,
  id: string,
  patch: {
    outcome: string;
    tenant_id?: string | null;
    environment?: string | null;
    account_id?: string | null;
    transfer_id?: string | null;
  },
) {
  await db.updateTable('bank_entries').set(patch).where('id', '=', id).execute();
}

export async function insertException(db: Queryable, row: Insertable<BankExceptionsTable>) {
  return db.insertInto('bank_exceptions').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listExceptions(db: Queryable, filter: { connectionId?: string; status?: string }, limit: number) {
  let q = db.selectFrom('bank_exceptions').selectAll().orderBy('id', 'desc').limit(limit);
  if (filter.connectionId) q = q.where('connection_id', '=', filter.connectionId);
  if (filter.status) q = q.where('status', '=', filter.status as 'open');
  return q.execute();
}

export async function findException(db: Queryable, id: string, lock?: 'update') {
  const q = db.selectFrom('bank_exceptions').selectAll().where('id', '=', id);
  return (lock ? q.forUpdate() : q).executeTakeFirst();
}

export async function resolveException(
  db: Queryable,
  id: string,
  patch: { status: 'assigned' | 'returned'; tenant_id?: string; account_id?: string; resolved_note: string | null },
) {
  return db
    .updateTable('bank_exceptions')
    .set({ ...patch, resolved_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'open')
    .returningAll()
    .executeTakeFirst();
}

/** Open exceptions of a connection: money the bank moved that the ledger has not booked. */
export async function openExceptions(db: Queryable, connectionId: string) {
  return db
    .selectFrom('bank_exceptions')
    .selectAll()
    .where('connection_id', '=', connectionId)
    .where('status', '=', 'open')
    .orderBy('id')
    .execute();
}

/**
 * What the ledger says the bank holds for a connection at the end of `date`: the settlement
 * accounts of every business of its environment in its currency mirror the money at the bank
 * (an inbound credit takes them down, a completed payout up), so the bank's balance is minus
 * their sum.
 */
export async function settlementAt(db: Queryable, c: ConnectionRow, date: string): Promise<bigint> {
  // eslint-disable-next-line no-restricted-syntax -- the connection's money spans every business of its environment
  const result = await sql<{ total: string | null }>`
    select sum(e.amount)::text as total
    from ledger_entries e join ledger_accounts a on a.id = e.account_id
    where a.system_role = 'settlement' and a.environment = ${c.environment} and a.currency = ${c.currency}
      and e.created_at < (${date}::date + 1)`.execute(db);
  return -BigInt(result.rows[0]?.total ?? '0');
}

export async function insertReconciliation(db: Queryable, row: Insertable<BankReconciliationsTable>) {
  return db.insertInto('bank_reconciliations').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function listReconciliations(db: Queryable, connectionId: string | undefined, limit: number) {
  let q = db.selectFrom('bank_reconciliations').selectAll().orderBy('id', 'desc').limit(limit);
  if (connectionId) q = q.where('connection_id', '=', connectionId);
  return q.execute();
}

/** The newest reconciliation of each connection (for /metrics). */
export async function latestReconciliations(db: Queryable) {
  const result = await sql<{ connection_id: string; currency: string; difference: string }>`
    select distinct on (connection_id) connection_id, currency, difference::text as difference
    from bank_reconciliations order by connection_id, id desc`.execute(db);
  return result.rows;
}

export async function setFileSummary(db: Queryable, id: string, summary: Record<string, unknown>) {
  await db
    .updateTable('bank_files')
    .set({ summary: JSON.stringify(summary) })
    .where('id', '=', id)
    .execute();
}

export async function findEntry(db: Queryable, id: string) {
  return db.selectFrom('bank_entries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}
