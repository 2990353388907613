import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Queryable } from '../db/client.js';
import { scoped, type ScopedTable } from '../db/scoped.js';
import type { Scope } from '../core/context.js';

/**
 * The header's search, over the session's business and environment only (db/scoped.ts): every
 * read is an index lookup. An id is looked up in every table that has pages, by primary key, in
 * one statement; text is an exact customer email (customers_email_idx), customer external id
 * (customers_external_id_idx), transfer client reference (transfers_client_reference_idx,
 * migration 1220), transaction reference (transactions_reference_idx; a transfer's reference is
 * its id) or request id (api_request_log_request_id_idx; a request id the server made is the
 * request's own id, migration 1265).
 */

export const HIT_KINDS = [
  'customer',
  'account',
  'transfer',
  'transaction',
  'card',
  'webhook_endpoint',
  'webhook_delivery',
  'event',
  'request',
] as const;
export type HitKind = (typeof HIT_KINDS)[number];

export interface SearchHit {
  kind: HitKind;
  id: string;
  label: string | null;
  note: string | null;
}

/** Matches per kind of text match: a search answers a page, not an export. */
const PER_MATCH = 20;

// Each branch is typed by its table; they all select the same four text columns.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type HitQuery = SelectQueryBuilder<any, any, SearchHit>;

interface Source {
  table: ScopedTable;
  label: RawBuilder<unknown>;
  note: RawBuilder<unknown>;
}

const customerName = sql`case when customers.type = 'business' then customers.business_name
  else nullif(concat_ws(' ', customers.first_name, customers.last_name), '') end`;

/** Where each kind lives and what a result shows of it. */
const SOURCES: Record<HitKind, Source> = {
  customer: { table: 'customers', label: customerName, note: sql`customers.email` },
  account: { table: 'accounts', label: sql`accounts.label`, note: sql`accounts.currency || ' · ' || accounts.status` },
  transfer: {
    table: 'transfers',
    label: sql`coalesce(transfers.client_reference, transfers.id::text)`,
    note: sql`transfers.currency || ' · ' || transfers.status`,
  },
  transaction: {
    table: 'transactions',
    label: sql`coalesce(nullif(transactions.description, ''), transactions.transaction_type)`,
    note: sql`transactions.currency || ' · ' || transactions.direction || ' · ' || transactions.reference`,
  },
  card: { table: 'cards', label: sql`'Card •••• ' || cards.last4`, note: sql`cards.status` },
  webhook_endpoint: { table: 'webhook_endpoints', label: sql`webhook_endpoints.url`, note: sql`webhook_endpoints.status` },
  webhook_delivery: { table: 'webhook_deliveries', label: sql`webhook_deliveries.event_type`, note: sql`webhook_deliveries.status` },
  event: { table: 'events', label: sql`events.event_type`, note: sql`null` },
  request: {
    table: 'api_request_log',
    label: sql`api_request_log.method || ' ' || api_request_log.path`,
    note: sql`api_request_log.status || ' · ' || coalesce(api_request_log.request_id, api_request_log.id::text)`,
  },
};

function hits(db: Queryable, scope: Scope, kind: HitKind): HitQuery {
  const { table, label, note } = SOURCES[kind];
  return (scoped(db, table, scope) as unknown as HitQuery).select([
    sql<HitKind>`${sql.lit(kind)}::text`.as('kind'),
    sql<string>`${sql.ref(`${table}.id`)}::text`.as('id'),
    sql<string | null>`(${label})::text`.as('label'),
    sql<string | null>`(${note})::text`.as('note'),
  ]) as HitQuery;
}

/**
 * Every object of the scope with this id (at most one per table), as one statement; a request's
 * id (the X-Request-Id it was answered with) finds its request too.
 */
export function byIdQuery(db: Queryable, scope: Scope, id: string): HitQuery {
  const branches = HIT_KINDS.map((kind) => {
    const q = hits(db, scope, kind).where(`${SOURCES[kind].table}.id`, '=', id);
    return kind === 'webhook_endpoint' ? q.where('webhook_endpoints.deleted_at', 'is', null) : q;
  });
  branches.push(hits(db, scope, 'request').where('api_request_log.request_id', '=', id));
  const [first, ...rest] = branches;
  return rest.reduce((all, q) => all.unionAll(q), first!);
}

export function findById(db: Queryable, scope: Scope, id: string): Promise<SearchHit[]> {
  return byIdQuery(db, scope, id).execute();
}

/** The exact text matches: email, external id, client reference, reference, request id (each limited). */
export function byTextQueries(db: Queryable, scope: Scope, text: string): HitQuery[] {
  const queries: HitQuery[] = [
    hits(db, scope, 'customer').where('customers.external_id', '=', text),
    hits(db, scope, 'transfer').where('transfers.client_reference', '=', text),
    hits(db, scope, 'transaction').where('transactions.reference', '=', text),
    hits(db, scope, 'request').where('api_request_log.request_id', '=', text),
  ];
  if (text.includes('@')) {
    // Both types: the unique email index starts with (tenant_id, environment, type).
    queries.unshift(
      hits(db, scope, 'customer')
        .where('customers.type', 'in', ['individual', 'business'])
        .where(sql`lower(customers.email)`, '=', text.toLowerCase()),
    );
  }
  return queries.map((q) => q.limit(PER_MATCH));
}

/** Objects whose email, external id, client reference, reference or request id is exactly `text`. */
export async function findByText(db: Queryable, scope: Scope, text: string): Promise<SearchHit[]> {
  return (await Promise.all(byTextQueries(db, scope, text).map((q) => q.execute()))).flat();
}
