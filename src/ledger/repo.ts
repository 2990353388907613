import { sql, type ColumnType, type CompiledQuery, type Insertable, type RawBuilder, type Selectable } from 'kysely';
import type { Queryable } from '../db/client.js';
import { pipelined } from '../db/pipeline.js';
import { scoped } from '../db/scoped.js';
import { compiledPerShape, insertPerShape } from '../db/compiled.js';
import { write, writeTogether, type Writer } from '../db/write-set.js';
import { valuesOf, valuesParameters, valuesShape } from '../db/values.js';
import type { LedgerScope, SystemRole } from './types.js';

/** Ledger tables: touched only by this file (src/ledger is the only writer of entries and balances). */
export interface LedgerAccountsTable {
  id: string;
  tenant_id: string;
  environment: string;
  currency: string;
  kind: 'account' | 'system';
  system_role: SystemRole | null;
  created_at: ColumnType<Date, never, never>;
}

export interface LedgerBalancesTable {
  account_id: string;
  tenant_id: string;
  environment: string;
  currency: string;
  posted: ColumnType<bigint, bigint | undefined, bigint>;
  pending_debits: ColumnType<bigint, bigint | undefined, bigint>;
  pending_credits: ColumnType<bigint, bigint | undefined, bigint>;
  allow_negative: boolean;
}

export interface LedgerTransactionsTable {
  id: string;
  tenant_id: string;
  environment: string;
  kind: string;
  reference: string | null;
  metadata: ColumnType<Record<string, unknown>, string, never>;
  created_at: ColumnType<Date, never, never>;
}

export interface LedgerEntriesTable {
  id: string;
  tenant_id: string;
  environment: string;
  transaction_id: string;
  account_id: string;
  currency: string;
  amount: bigint;
  balance_after: bigint;
  created_at: ColumnType<Date, never, never>;
}

export interface LedgerHoldsTable {
  id: string;
  tenant_id: string;
  environment: string;
  debit_account_id: string;
  credit_account_id: string;
  currency: string;
  amount: bigint;
  status: ColumnType<'pending' | 'posted' | 'voided', 'pending' | undefined, 'posted' | 'voided'>;
  posted_amount: bigint | null;
  kind: string;
  reference: string | null;
  metadata: ColumnType<Record<string, unknown>, string, never>;
  transaction_id: string | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../db/types.js' {
  interface Database {
    ledger_accounts: LedgerAccountsTable;
    ledger_balances: LedgerBalancesTable;
    ledger_transactions: LedgerTransactionsTable;
    ledger_entries: LedgerEntriesTable;
    ledger_holds: LedgerHoldsTable;
  }
}

export type BalanceRow = Selectable<LedgerBalancesTable>;
/** A locked balance row with its transaction's now() (the time the batch's ledger rows get). */
export type LockedBalanceRow = BalanceRow & { tx_now: Date };
export type HoldRow = Selectable<LedgerHoldsTable>;
export type EntryRow = Selectable<LedgerEntriesTable>;

export async function insertAccount(
  db: Queryable,
  scope: LedgerScope,
  row: { id: string; currency: string; kind: 'account' | 'system'; systemRole: SystemRole | null; allowNegative: boolean },
) {
  const base = { tenant_id: scope.tenantId, environment: scope.environment, currency: row.currency };
  await db
    .insertInto('ledger_accounts')
    .values({ ...base, id: row.id, kind: row.kind, system_role: row.systemRole })
    .execute();
  await db
    .insertInto('ledger_balances')
    .values({ ...base, account_id: row.id, allow_negative: row.allowNegative })
    .execute();
}

export async function findSystemAccount(db: Queryable, scope: LedgerScope, role: SystemRole, currency: string) {
  const row = await scoped(db, 'ledger_accounts', scope)
    .select('id')
    .where('currency', '=', currency)
    .where('system_role', '=', role)
    .executeTakeFirst();
  return row?.id;
}

/** Inserts the system account unless a concurrent transaction already did (unique index). */
export async function insertSystemAccountIfAbsent(db: Queryable, scope: LedgerScope, id: string, role: SystemRole, currency: string) {
  const inserted = await sql<{ id: string }>`
    insert into ledger_accounts (id, tenant_id, environment, currency, kind, system_role)
    values (${id}, ${scope.tenantId}, ${scope.environment}, ${currency}, 'system', ${role})
    on conflict (tenant_id, environment, currency, system_role) where system_role is not null do nothing
    returning id`.execute(db);
  if (inserted.rows.length === 0) return false;
  await db
    .insertInto('ledger_balances')
    .values({ account_id: id, tenant_id: scope.tenantId, environment: scope.environment, currency, allow_negative: true })
    .execute();
  return true;
}

/**
 * System accounts a batch creates with their first postings (PostingBatch.addFresh), each with
 * its balance row holding what the batch posted: sent with the batch's other writes. A concurrent
 * transaction creating the same account first makes the statement fail on the unique index, and
 * the batch reruns (then it finds that account).
 */
export async function insertFreshSystemAccounts(
  to: Writer,
  rows: {
    id: string;
    scope: LedgerScope;
    role: SystemRole;
    currency: string;
    posted: bigint;
    pendingDebits: bigint;
    pendingCredits: bigint;
  }[],
): Promise<void> {
  if (rows.length === 0) return;
  const owner = (r: (typeof rows)[number]) => ({ tenant_id: r.scope.tenantId, environment: r.scope.environment, currency: r.currency });
  await writeTogether(to, (db) => [
    db.insertInto('ledger_accounts').values(rows.map((r) => ({ id: r.id, ...owner(r), kind: 'system', system_role: r.role }))),
    db.insertInto('ledger_balances').values(
      rows.map((r) => ({
        account_id: r.id,
        ...owner(r),
        allow_negative: true,
        posted: r.posted,
        pending_debits: r.pendingDebits,
        pending_credits: r.pendingCredits,
      })),
    ),
  ]);
}

/** Changes the pending columns (holds), with the same available-balance guard for a new debit hold. */
export async function applyPending(
  db: Queryable,
  scope: LedgerScope,
  accountId: string,
  currency: string,
  change: { debits?: bigint; credits?: bigint; posted?: bigint },
) {
  const debits = change.debits ?? 0n;
  const credits = change.credits ?? 0n;
  const posted = change.posted ?? 0n;
  // eslint-disable-next-line no-restricted-syntax -- one business's balance row, but the available-balance guard is SQL the builder cannot express
  const update = sql<{ posted: bigint }>`
    update ledger_balances set pending_debits = pending_debits + ${debits}, pending_credits = pending_credits + ${credits},
      posted = posted + ${posted}
    where account_id = ${accountId} and tenant_id = ${scope.tenantId} and environment = ${scope.environment}
      and currency = ${currency}
      and (allow_negative or posted + ${posted}::bigint - pending_debits - ${debits}::bigint >= 0
           or (${debits}::bigint <= 0 and ${posted}::bigint >= 0))
    returning posted`.compile(db);
  // Its balance lock first, in the same round trip (balanceLock).
  const [, rows] = await pipelined(db, balanceLocks(db, [accountId]), update);
  return rows[0]?.posted;
}

/** Balance rows of `scope`, ascending; with `lock`, locked first (lockScopedBalancesStatements). */
export async function findBalances(db: Queryable, scope: LedgerScope, accountIds: string[], lock = false): Promise<BalanceRow[]> {
  if (accountIds.length === 0) return [];
  if (!lock) return scoped(db, 'ledger_balances', scope).selectAll().where('account_id', 'in', accountIds).orderBy('account_id').execute();
  const [, rows] = await pipelined(db, ...lockScopedBalancesStatements(db, scope, accountIds));
  return rows;
}

/**
 * The transaction and its entries in one statement (one round trip): the entries' reference check
 * (migration 1240) runs at the end of the statement, when the transaction row exists. Returns the creation time
 * (now(), the same for both: it is the database transaction's start time).
 */
export async function insertTransactionWithEntries(
  db: Queryable,
  scope: LedgerScope,
  row: { id: string; kind: string; reference: string | null; metadata: Record<string, unknown> },
  entries: Omit<EntryRow, 'created_at' | 'tenant_id' | 'environment' | 'transaction_id'>[],
): Promise<Date> {
  const tx = { ...row, tenant_id: scope.tenantId, environment: scope.environment, metadata: JSON.stringify(row.metadata) };
  const result = await db
    .with('tx', (qb) => qb.insertInto('ledger_transactions').values(tx))
    .insertInto('ledger_entries')
    .values(entries.map((e) => ({ ...e, tenant_id: scope.tenantId, environment: scope.environment, transaction_id: row.id })))
    .returning('created_at')
    .execute();
  return result[0]?.created_at ?? new Date();
}

export async function findTransaction(db: Queryable, scope: LedgerScope, id: string) {
  return scoped(db, 'ledger_transactions', scope).selectAll().where('id', '=', id).executeTakeFirst();
}

export async function entriesOf(db: Queryable, transactionIds: string[]) {
  if (transactionIds.length === 0) return [];
  return db.selectFrom('ledger_entries').selectAll().where('transaction_id', 'in', transactionIds).orderBy('id').execute();
}

export async function findHoldForUpdate(db: Queryable, scope: LedgerScope, id: string) {
  return scoped(db, 'ledger_holds', scope).selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

export async function findHold(db: Queryable, scope: LedgerScope, id: string) {
  return scoped(db, 'ledger_holds', scope).selectAll().where('id', '=', id).executeTakeFirst();
}

/** Pending holds of `scope` among `ids`, locked in ascending id (a batch voiding them; finished ones are left out). */
export async function lockPendingHolds(db: Queryable, scope: LedgerScope, ids: string[]) {
  if (ids.length === 0) return [];
  return scoped(db, 'ledger_holds', scope)
    .selectAll()
    .where('id', 'in', [...new Set(ids)].sort())
    .where('status', '=', 'pending')
    .orderBy('id')
    .forUpdate()
    .execute();
}

/** Voids many pending holds in one statement (a batch that locked them with lockPendingHolds). */
export async function voidHolds(to: Writer, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await write(to, (db) =>
    db
      .updateTable('ledger_holds')
      .set({ status: 'voided', updated_at: sql<Date>`now()` })
      .where('id', 'in', ids)
      .where('status', '=', 'pending'),
  );
}

/** Posts many pending holds in full in one statement (a batch that locked them with lockPendingHolds). */
export async function postHolds(to: Writer, holds: { id: string; postedAmount: bigint; transactionId: string }[]): Promise<void> {
  if (holds.length === 0) return;
  await write(
    to,
    () => sql`
    update ledger_holds h set status = 'posted', posted_amount = u.a, transaction_id = u.t, updated_at = now()
    from ${valuesOf(
      'u',
      { id: 'uuid', a: 'bigint', t: 'uuid' },
      holds.map((x) => [x.id, x.postedAmount, x.transactionId]),
    )}
    where h.id = u.id and h.status = 'pending'`,
  );
}

/** Moves a pending hold to its final state; only a pending hold changes (at most once). */
export async function finishHold(
  db: Queryable,
  id: string,
  status: 'posted' | 'voided',
  postedAmount: bigint | null,
  transactionId: string | null,
) {
  return db
    .updateTable('ledger_holds')
    .set({ status, posted_amount: postedAmount, transaction_id: transactionId, updated_at: new Date() })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

/**
 * A balance row is locked with a transaction-level advisory lock on its account's id, not with a
 * row lock. Every posting locks the balance rows it reads, to update each once at its flush; a
 * row lock (FOR UPDATE) is a WAL record for each row (about 54 bytes), on every transfer, and the
 * update locks the row anyway. The advisory lock keeps out the same writers: every statement of
 * this file that changes a balance row runs after it, and so does a change of the account's
 * status (the trigger of migration 1266, with this key). The rows are then read by a statement of
 * their own, sent right behind in the same round trip: PostgreSQL takes its snapshot once the
 * locks are held, so it sees what the previous holder committed (a single statement's snapshot
 * is taken before it waits). Taken in ascending id, as the row locks were: the lock order of every
 * money movement is unchanged. Its key is ledger_balance_lock_key (migration 1266), the trigger's.
 */
const balanceLock = (id: RawBuilder<string>) => sql`pg_advisory_xact_lock(ledger_balance_lock_key(${id}::uuid))`;

/** One account's balance lock, as a statement (a test or a bench that holds a balance row). */
export const balanceLockOf = (accountId: string) => sql`select ${balanceLock(sql.val(accountId))}`;

/** The statement that takes the balance locks of `ids`, ascending (callers give ids of balance rows they may change). */
function balanceLocks(db: Queryable, ids: string[]): CompiledQuery<unknown> {
  return sql`select ${balanceLock(sql.ref('id'))} from (select distinct unnest(${ids}::uuid[]) as id order by id) s`.compile(db);
}

/**
 * Locks and reads balance rows in ascending id, in one round trip (a posting batch's first step);
 * each row also carries the transaction's time (now(), what the entries will be stamped with).
 */
export async function lockBalancesReturning(db: Queryable, sortedIds: string[]): Promise<LockedBalanceRow[]> {
  if (sortedIds.length === 0) return [];
  const read = sql<LockedBalanceRow>`
    select *, now() as tx_now from ledger_balances where account_id = any(${sortedIds}::uuid[]) order by account_id`.compile(db);
  const [, rows] = await pipelined(db, balanceLocks(db, sortedIds), read);
  return rows;
}

/** The business's system accounts of `role` in `currencies`. */
const systemAccountsOf = (db: Queryable, scope: LedgerScope, system: { role: SystemRole; currencies: string[] }) =>
  scoped(db, 'ledger_accounts', scope)
    .where('system_role', '=', system.role)
    .where('currency', '=', sql<string>`any(${system.currencies}::text[])`);

/**
 * lockBalancesReturning of one business's accounts, as the two statements its caller sends, in
 * this order (db/pipeline.ts): the locks, then the rows. With `system`, also the balance rows of
 * the business's system accounts of that role in those currencies, found by the statements
 * themselves: a batch locks the rows of the FX positions it moves in the same round trip as it
 * learns their ids (findSystemAccountsStatement, sent before: what it finds, these lock).
 */
export function lockScopedBalancesStatements(
  db: Queryable,
  scope: LedgerScope,
  sortedIds: string[],
  system?: { role: SystemRole; currencies: string[] },
): [CompiledQuery<unknown>, CompiledQuery<LockedBalanceRow>] {
  if (!system) return [scopedLocksOnce(db, scope, sortedIds), scopedReadOnce(db, scope, sortedIds)];
  return [scopedLocks(db, scope, sortedIds, system).compile(db), scopedRead(db, scope, sortedIds, system).compile()];
}

/** Without system accounts, each of the two has one text whatever the ids: compiled once. */
const scopedLocksOnce = compiledPerShape(
  (db: Queryable, scope: LedgerScope, sortedIds: string[]) => scopedLocks(db, scope, sortedIds),
  (scope, sortedIds) => ({ shape: '', parameters: [scope.tenantId, scope.environment, sortedIds] }),
);
const scopedReadOnce = compiledPerShape(
  (db: Queryable, scope: LedgerScope, sortedIds: string[]) => scopedRead(db, scope, sortedIds),
  (scope, sortedIds) => ({ shape: '', parameters: [scope.tenantId, scope.environment, sortedIds] }),
);

type System = { role: SystemRole; currencies: string[] };

/** The business's balance rows among `ids` (and of its system accounts), ascending. */
const scopedBalances = (db: Queryable, scope: LedgerScope, ids: string[], system?: System) =>
  scoped(db, 'ledger_balances', scope)
    // One text whatever the number of ids (an IN list has one per count): prepared once per connection.
    .where((eb) => {
      const named = eb('account_id', '=', sql<string>`any(${ids}::uuid[])`);
      return system ? eb.or([named, eb('account_id', 'in', systemAccountsOf(db, scope, system).select('id'))]) : named;
    })
    .orderBy('account_id');

/**
 * Their locks: the rows' ids are read first, so another business's account named here is not
 * locked (its id and scope never change: a snapshot's read of them is as good as any).
 */
const scopedLocks = (db: Queryable, scope: LedgerScope, ids: string[], system?: System) =>
  sql`select ${balanceLock(sql.ref('s.account_id'))} from (${scopedBalances(db, scope, ids, system).select('account_id')}) s`;

const scopedRead = (db: Queryable, scope: LedgerScope, ids: string[], system?: System) =>
  scopedBalances(db, scope, ids, system)
    .selectAll()
    .select(sql<Date>`now()`.as('tx_now'));

/** The business's system accounts of `role` in `currencies` (id and currency), as a statement its caller sends (db/pipeline.ts). */
export function findSystemAccountsStatement(
  db: Queryable,
  scope: LedgerScope,
  system: { role: SystemRole; currencies: string[] },
): CompiledQuery<{ id: string; currency: string }> {
  return systemAccountsOf(db, scope, system).select(['id', 'currency']).compile();
}

/** Adds each account's net deltas of a batch (posted, pending debits and credits): one statement for the batch. */
export async function addBalanceDeltas(
  to: Writer,
  deltas: { accountId: string; posted: bigint; pendingDebits: bigint; pendingCredits: bigint }[],
) {
  if (deltas.length === 0) return;
  const rows = deltas.map((d) => [d.accountId, d.posted.toString(), d.pendingDebits.toString(), d.pendingCredits.toString()]);
  await write(to, (db) => addBalanceDeltasOnce(db, rows));
}

/** Built and compiled by Kysely once per shape of its rows (db/values.ts valuesShape): a batch only fills in its deltas. */
const addBalanceDeltasOnce = compiledPerShape(
  (_db: Queryable, rows: string[][]) => sql`
    update ledger_balances b set posted = b.posted + d.posted, pending_debits = b.pending_debits + d.debits,
      pending_credits = b.pending_credits + d.credits
    from ${valuesOf('d', { id: 'uuid', posted: 'bigint', debits: 'bigint', credits: 'bigint' }, rows)}
    where b.account_id = d.id`,
  (rows) => ({ shape: valuesShape(rows), parameters: valuesParameters(rows) }),
);

/** Many new pending holds in one statement (a batch's payouts). */
export async function insertHolds(
  to: Writer,
  rows: (Omit<HoldRow, 'created_at' | 'updated_at' | 'status' | 'metadata'> & { metadata: string })[],
) {
  if (rows.length === 0) return;
  await write(to, (db) => db.insertInto('ledger_holds').values(rows));
}

const insertLedgerTransactions = insertPerShape('ledger_transactions');
const insertLedgerEntries = insertPerShape('ledger_entries');

export type TransactionInsert = Insertable<LedgerTransactionsTable>;
export type EntryInsert = Insertable<LedgerEntriesTable>;

/** Many transactions and all their entries in one statement (stamped with the transaction's now()). */
export async function insertTransactionsWithEntries(to: Writer, transactions: TransactionInsert[], entries: EntryInsert[]): Promise<void> {
  if (transactions.length === 0) return;
  await writeTogether(to, (db) => [insertLedgerTransactions(db, transactions), insertLedgerEntries(db, entries)]);
}
