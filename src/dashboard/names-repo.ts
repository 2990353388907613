import { sql, type RawBuilder } from 'kysely';
import type { Queryable } from '../db/client.js';
import type { PageExtra } from '../db/pagination.js';
import { scoped } from '../db/scoped.js';
import type { Scope } from '../core/context.js';

/**
 * Names beside ids: the account labels and customer names a person reads instead of UUIDs. Each is
 * a set of left joins on primary keys that a list adds to its page query (db/pagination.ts
 * PageExtra), so a page stays one statement and only the page's rows are joined, never the
 * count's. A referenced row belongs to the same business by construction (the services check
 * it when the reference is written), so the joins need no scope of their own.
 */

/** A customer's display name: the business name, or the person's first and last names. */
function customerName(alias: string): RawBuilder<string | null> {
  const col = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<string | null>`case when ${col('type')} = 'business' then ${col('business_name')}
    else nullif(concat_ws(' ', ${col('first_name')}, ${col('last_name')}), '') end`;
}

export interface TransferNames {
  from_label: string | null;
  from_customer_id: string | null;
  from_customer: string | null;
  to_label: string | null;
  to_customer_id: string | null;
  to_customer: string | null;
}

/** A transfer's source and destination: account label (or card, or external account's name) and customer. */
export const transferNames: PageExtra<TransferNames> = {
  join: (qb) =>
    qb
      .leftJoin('accounts as fa', 'fa.id', 'transfers.source_id')
      .leftJoin('customers as fc', 'fc.id', 'transfers.customer_id')
      .leftJoin('accounts as ta', 'ta.id', 'transfers.destination_id')
      .leftJoin('cards as tk', 'tk.id', 'transfers.destination_id')
      .leftJoin('external_accounts as tx', 'tx.id', 'transfers.destination_id')
      .leftJoin('customers as tc', 'tc.id', 'transfers.destination_customer_id')
      .select(
        sql`json_build_object(
          'from_label', fa.label, 'from_customer_id', fc.id, 'from_customer', ${customerName('fc')},
          'to_label', coalesce(ta.label, 'Card •••• ' || tk.last4, tx.account_name),
          'to_customer_id', tc.id, 'to_customer', ${customerName('tc')})`.as('extra'),
      ),
};

export interface TransactionNames {
  account_label: string | null;
  customer: string | null;
  /** The other side of the movement: the receiving account of money out, the sending one of money in. */
  other_id: string | null;
  other_label: string | null;
  other_customer_id: string | null;
  other_customer: string | null;
}

export const transactionNames: PageExtra<TransactionNames> = {
  join: (qb) =>
    qb
      .leftJoin('accounts as ta', 'ta.id', 'transactions.account_id')
      .leftJoin('customers as tc', 'tc.id', 'transactions.customer_id')
      .leftJoin('accounts as oa', (join) =>
        join.on(
          sql<boolean>`oa.id = case when transactions.direction = 'out' then transactions.receiving_account_id else transactions.sending_account_id end`,
        ),
      )
      .leftJoin('customers as oc', 'oc.id', 'oa.customer_id')
      .select(
        sql`json_build_object(
          'account_label', ta.label, 'customer', ${customerName('tc')},
          'other_id', oa.id, 'other_label', oa.label, 'other_customer_id', oc.id, 'other_customer', ${customerName('oc')})`.as('extra'),
      ),
};

export interface OwnerName {
  customer: string | null;
}

/** The customer an account belongs to (none: the business's own account). */
export const accountOwner: PageExtra<OwnerName> = {
  join: (qb) =>
    qb
      .leftJoin('customers as oc', 'oc.id', 'accounts.customer_id')
      .select(sql`json_build_object('customer', ${customerName('oc')})`.as('extra')),
};

export const cardOwner: PageExtra<OwnerName> = {
  join: (qb) =>
    qb
      .leftJoin('customers as oc', 'oc.id', 'cards.customer_id')
      .select(sql`json_build_object('customer', ${customerName('oc')})`.as('extra')),
};

/** The names of one transfer, for its page (read beside the transfer, not after it). */
export async function namesOfTransfer(db: Queryable, scope: Scope, id: string): Promise<TransferNames | undefined> {
  const row = await transferNames.join(scoped(db, 'transfers', scope).where('transfers.id', '=', id)).executeTakeFirst();
  return (row as { extra?: TransferNames } | undefined)?.extra;
}

/** The names of one transaction, for its page. */
export async function namesOfTransaction(db: Queryable, scope: Scope, id: string): Promise<TransactionNames | undefined> {
  const row = await transactionNames.join(scoped(db, 'transactions', scope).where('transactions.id', '=', id)).executeTakeFirst();
  return (row as { extra?: TransactionNames } | undefined)?.extra;
}

/** A customer's display name by id (an account's or card's owner, on their pages). */
export async function customerNameOf(db: Queryable, scope: Scope, id: string | null | undefined): Promise<string | null> {
  if (!id) return null;
  const row = await scoped(db, 'customers', scope)
    .where('customers.id', '=', id)
    .select(customerName('customers').as('name'))
    .executeTakeFirst();
  return row?.name ?? null;
}
