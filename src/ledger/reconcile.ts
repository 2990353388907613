import { sql } from 'kysely';
import type { Queryable } from '../db/client.js';

export interface ReconcileReport {
  ok: boolean;
  accounts_checked: number;
  transactions_checked: number;
  /** Transactions whose entries do not sum to zero in some currency. */
  unbalanced_transactions: { transaction_id: string; currency: string; sum: string }[];
  /** Accounts whose posted balance differs from the sum of their entries. */
  balance_mismatches: { account_id: string; posted: string; entries_sum: string }[];
  /** Accounts whose pending columns differ from their pending holds. */
  pending_mismatches: {
    account_id: string;
    pending_debits: string;
    pending_credits: string;
    holds_debits: string;
    holds_credits: string;
  }[];
  /** Entries or holds whose currency differs from their account's. */
  currency_mismatches: { id: string; account_id: string }[];
}

const LIMIT = 100;

/**
 * Proves the ledger's invariants from the tables alone: zero sum per transaction and currency,
 * posted = sum of entries and pending = open holds for every account, one currency per account.
 * `tenantId` narrows it to one business; without it the whole database is checked.
 */
export async function reconcile(db: Queryable, tenantId?: string): Promise<ReconcileReport> {
  // The tenant filter on a column, or no filter.
  const inScope = (column: string) => (tenantId ? sql`${sql.ref(column)} = ${tenantId}` : sql`true`);
  const scope = inScope('tenant_id');
  const unbalanced = await sql<{ transaction_id: string; currency: string; sum: string }>`
    select transaction_id, currency, sum(amount)::text as sum from ledger_entries where ${scope}
    group by transaction_id, currency having sum(amount) <> 0 limit ${LIMIT}`.execute(db);
  const mismatches = await sql<{ account_id: string; posted: string; entries_sum: string }>`
    select b.account_id, b.posted::text as posted, coalesce(s.total, 0)::text as entries_sum
    from ledger_balances b
    left join (select account_id, sum(amount) as total from ledger_entries where ${scope} group by account_id) s
      on s.account_id = b.account_id
    where ${inScope('b.tenant_id')} and b.posted <> coalesce(s.total, 0) limit ${LIMIT}`.execute(db);
  const pending = await sql<ReconcileReport['pending_mismatches'][number]>`
    select b.account_id, b.pending_debits::text as pending_debits, b.pending_credits::text as pending_credits,
      coalesce(d.total, 0)::text as holds_debits, coalesce(c.total, 0)::text as holds_credits
    from ledger_balances b
    left join (select debit_account_id as id, sum(amount) as total from ledger_holds
               where status = 'pending' and ${scope} group by debit_account_id) d on d.id = b.account_id
    left join (select credit_account_id as id, sum(amount) as total from ledger_holds
               where status = 'pending' and ${scope} group by credit_account_id) c on c.id = b.account_id
    where ${inScope('b.tenant_id')}
      and (b.pending_debits <> coalesce(d.total, 0) or b.pending_credits <> coalesce(c.total, 0))
    limit ${LIMIT}`.execute(db);
  const currency = await sql<{ id: string; account_id: string }>`
    select e.id, e.account_id from ledger_entries e join ledger_accounts a on a.id = e.account_id
    where ${inScope('e.tenant_id')} and e.currency <> a.currency limit ${LIMIT}`.execute(db);
  const counts = await sql<{ accounts: string; transactions: string }>`
    select (select count(*) from ledger_balances where ${scope})::text as accounts,
           (select count(*) from ledger_transactions where ${scope})::text as transactions`.execute(db);
  const report: ReconcileReport = {
    ok: false,
    accounts_checked: Number(counts.rows[0]?.accounts ?? 0),
    transactions_checked: Number(counts.rows[0]?.transactions ?? 0),
    unbalanced_transactions: unbalanced.rows,
    balance_mismatches: mismatches.rows,
    pending_mismatches: pending.rows,
    currency_mismatches: currency.rows,
  };
  report.ok =
    report.unbalanced_transactions.length === 0 &&
    report.balance_mismatches.length === 0 &&
    report.pending_mismatches.length === 0 &&
    report.currency_mismatches.length === 0;
  return report;
}
