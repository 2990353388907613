import { sql } from 'kysely';
import type { Queryable } from '../db/client.js';
import type { LedgerScope } from './types.js';

/**
 * Reads of an account's past from what the ledger keeps (migration 1190). Instants are given as
 * id bounds: the smallest UUIDv7 of the first millisecond after the instant (ids/uuidv7LowerBound),
 * so "as of T" means every entry drawn at or before T. An entry's id is drawn while its posting
 * holds the account's balance row, so per account the id order is the order of balance_after.
 */

/** The posted balance just before `bound`: the balance_after of the last earlier entry (one index seek). */
export async function postedBefore(db: Queryable, scope: LedgerScope, accountId: string, bound: string): Promise<bigint> {
  const { rows } = await sql<{ balance_after: bigint }>`
    select balance_after from ledger_entries
    where account_id = ${accountId} and id < ${bound}
      and tenant_id = ${scope.tenantId} and environment = ${scope.environment}
    order by id desc limit 1`.execute(db);
  return rows[0] ? BigInt(rows[0].balance_after) : 0n;
}

/**
 * Funds held on the account at `at` (a hold drawn before `bound` and not finished by then): those
 * pending now, through the pending-holds index, and those finished after `at`, through the
 * finished-holds index: the second read grows with the holds finished since `at`, not with the
 * account's history before it.
 */
export async function heldAt(db: Queryable, scope: LedgerScope, accountId: string, at: Date, bound: string): Promise<bigint> {
  const { rows } = await sql<{ held: bigint }>`
    select (
      coalesce((select sum(amount) from ledger_holds
        where debit_account_id = ${accountId} and status = 'pending' and id < ${bound}
          and tenant_id = ${scope.tenantId} and environment = ${scope.environment}), 0)
      + coalesce((select sum(amount) from ledger_holds
        where debit_account_id = ${accountId} and status <> 'pending' and updated_at > ${at} and id < ${bound}
          and tenant_id = ${scope.tenantId} and environment = ${scope.environment}), 0)
    )::bigint as held`.execute(db);
  return BigInt(rows[0]?.held ?? 0n);
}

export interface PeriodTotals {
  credits: bigint;
  debits: bigint;
  creditCount: number;
  debitCount: number;
}

/** Credits and debits of the entries in [from, to): an index-only range scan over that period's entries. */
export async function totalsBetween(db: Queryable, scope: LedgerScope, accountId: string, from: string, to: string): Promise<PeriodTotals> {
  const { rows } = await sql<{ credits: bigint; debits: bigint; credit_count: bigint; debit_count: bigint }>`
    select coalesce(sum(amount) filter (where amount > 0), 0)::bigint as credits,
           coalesce(-sum(amount) filter (where amount < 0), 0)::bigint as debits,
           count(*) filter (where amount > 0) as credit_count,
           count(*) filter (where amount < 0) as debit_count
    from ledger_entries
    where account_id = ${accountId} and id >= ${from} and id < ${to}
      and tenant_id = ${scope.tenantId} and environment = ${scope.environment}`.execute(db);
  const r = rows[0]!;
  return { credits: BigInt(r.credits), debits: BigInt(r.debits), creditCount: Number(r.credit_count), debitCount: Number(r.debit_count) };
}

export interface HistoryEntry {
  id: string;
  transactionId: string;
  amount: bigint;
  balanceAfter: bigint;
  kind: string;
  reference: string | null;
  /** The account transaction the API shows for this movement, when there is one. */
  transaction: { id: string; description: string; transactionType: string; channel: string; clientReference: string | null } | null;
}

/**
 * One keyset page of the account's entries in [after, to), oldest first, each with its ledger
 * transaction and the account transaction (transactions row) that describes it, found through
 * the shared reference.
 */
export async function entriesPage(
  db: Queryable,
  scope: LedgerScope,
  accountId: string,
  after: { id: string; inclusive: boolean },
  to: string,
  limit: number,
): Promise<HistoryEntry[]> {
  const lower = after.inclusive ? sql`e.id >= ${after.id}` : sql`e.id > ${after.id}`;
  const { rows } = await sql<{
    id: string;
    transaction_id: string;
    amount: bigint;
    balance_after: bigint;
    kind: string;
    reference: string | null;
    t_id: string | null;
    t_description: string | null;
    t_type: string | null;
    t_channel: string | null;
    t_client_reference: string | null;
  }>`
    select e.id, e.transaction_id, e.amount, e.balance_after, lt.kind, lt.reference,
           t.id as t_id, t.description as t_description, t.transaction_type as t_type, t.channel as t_channel,
           t.client_reference as t_client_reference
    from ledger_entries e
    join ledger_transactions lt on lt.id = e.transaction_id
    left join lateral (
      select id, description, transaction_type, channel, client_reference from transactions
      where tenant_id = e.tenant_id and environment = e.environment and reference = lt.reference
        and account_id = e.account_id and ledger_transaction_id = e.transaction_id
      limit 1
    ) t on true
    where e.account_id = ${accountId} and ${lower} and e.id < ${to}
      and e.tenant_id = ${scope.tenantId} and e.environment = ${scope.environment}
    order by e.id
    limit ${limit}`.execute(db);
  return rows.map((r) => ({
    id: r.id,
    transactionId: r.transaction_id,
    amount: BigInt(r.amount),
    balanceAfter: BigInt(r.balance_after),
    kind: r.kind,
    reference: r.reference,
    transaction: r.t_id
      ? {
          id: r.t_id,
          description: r.t_description ?? '',
          transactionType: r.t_type ?? r.kind,
          channel: r.t_channel ?? '',
          clientReference: r.t_client_reference,
        }
      : null,
  }));
}

/**
 * The posted balance just before each bound (a day's closing balance when the bound is the next
 * day's first id): one statement, one index seek per bound on the account's history index,
 * whatever the account's number of entries. In the order of `bounds`.
 */
export async function balancesBefore(db: Queryable, scope: LedgerScope, accountId: string, bounds: string[]): Promise<bigint[]> {
  if (bounds.length === 0) return [];
  const { rows } = await sql<{ balance: bigint | null }>`
    select (
      select e.balance_after from ledger_entries e
      where e.account_id = ${accountId} and e.id < b.bound
        and e.tenant_id = ${scope.tenantId} and e.environment = ${scope.environment}
      order by e.id desc limit 1
    ) as balance
    from unnest(${bounds}::uuid[]) with ordinality as b(bound, n)
    order by b.n`.execute(db);
  return rows.map((r) => (r.balance === null ? 0n : BigInt(r.balance)));
}
