import { sql } from 'kysely';
import type { Queryable, Trx } from '../db/client.js';
import { scoped } from '../db/scoped.js';
import type { Scope } from '../core/context.js';
import { uuidv7LowerBound } from '../lib/ids.js';

/**
 * The overview's reads. Each one is bounded: the checklist's are LIMIT 1 on a (tenant_id,
 * environment, id) index, the balances sum the business's own accounts, and the daily series read
 * only the ids of the range (UUIDv7: an id range is a time range on the same index).
 */

/** The day of a row in UTC, as YYYY-MM-DD. */
const DAY = sql<string>`to_char(created_at at time zone 'UTC', 'YYYY-MM-DD')`;

export interface CurrencyBalance {
  currency: string;
  posted: bigint;
  available: bigint;
  accounts: number;
}

/** Sums of the business's accounts per currency (minor units, as bigint). */
export async function balancesByCurrency(db: Queryable, scope: Scope): Promise<CurrencyBalance[]> {
  const rows = await scoped(db, 'accounts', scope)
    .innerJoin('ledger_balances', 'ledger_balances.account_id', 'accounts.id')
    .where('accounts.status', '<>', 'deleted')
    .select([
      'accounts.currency',
      sql<string>`coalesce(sum(ledger_balances.posted), 0)::text`.as('posted'),
      sql<string>`coalesce(sum(ledger_balances.posted - ledger_balances.pending_debits), 0)::text`.as('available'),
      sql<string>`count(*)::text`.as('accounts'),
    ])
    .groupBy('accounts.currency')
    .orderBy('accounts.currency')
    .execute();
  return rows.map((r) => ({
    currency: r.currency,
    posted: BigInt(r.posted),
    available: BigInt(r.available),
    accounts: Number(r.accounts),
  }));
}

export interface Checklist {
  request: boolean;
  customer: boolean;
  webhook: boolean;
  delivered: boolean;
  liveKeyUsed: boolean;
}

/** What the business has done already: each a LIMIT 1 read. The live key counts in either environment's view. */
export async function checklist(db: Queryable, scope: Scope): Promise<Checklist> {
  const found = (row: Promise<unknown>) => row.then((r) => r !== undefined);
  const live = { tenantId: scope.tenantId, environment: 'live' as const };
  const [request, customer, webhook, delivered, liveKeyUsed] = await Promise.all([
    found(scoped(db, 'api_request_log', scope).select('api_request_log.id').limit(1).executeTakeFirst()),
    found(scoped(db, 'customers', scope).select('customers.id').limit(1).executeTakeFirst()),
    found(scoped(db, 'webhook_endpoints', scope).select('webhook_endpoints.id').limit(1).executeTakeFirst()),
    // An endpoint's last success, not a scan of deliveries: a business has few endpoints and many deliveries.
    found(
      scoped(db, 'webhook_endpoints', scope)
        .where(sql<boolean>`webhook_endpoints.last_success_at is not null`)
        .select('webhook_endpoints.id')
        .limit(1)
        .executeTakeFirst(),
    ),
    found(scoped(db, 'api_request_log', live).select('api_request_log.id').limit(1).executeTakeFirst()),
  ]);
  return { request, customer, webhook, delivered, liveKeyUsed };
}

export interface RecentTransfer {
  id: string;
  status: string;
  currency: string;
  amount: bigint;
  created_at: Date;
}

export async function recentTransfers(db: Queryable, scope: Scope, limit: number): Promise<RecentTransfer[]> {
  const rows = await scoped(db, 'transfers', scope)
    .select(['id', 'status', 'currency', 'amount', 'created_at'])
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, amount: BigInt(r.amount as unknown as string | bigint) }));
}

export interface RecentEvent {
  id: string;
  event_type: string;
  created_at: Date;
}

export async function recentEvents(db: Queryable, scope: Scope, limit: number): Promise<RecentEvent[]> {
  return scoped(db, 'events', scope).select(['id', 'event_type', 'created_at']).orderBy('id', 'desc').limit(limit).execute();
}

export interface TransferDay {
  day: string;
  currency: string;
  count: number;
  volume: bigint;
}

/** Transfers created per day and currency since `since` (count and amount in minor units). */
export async function transfersPerDay(db: Queryable, scope: Scope, since: Date): Promise<TransferDay[]> {
  const rows = await scoped(db, 'transfers', scope)
    .where('id', '>=', uuidv7LowerBound(since))
    .select([DAY.as('day'), 'currency', sql<string>`count(*)::text`.as('count'), sql<string>`sum(amount)::text`.as('volume')])
    .groupBy([sql`1`, 'currency'])
    .execute();
  return rows.map((r) => ({ day: r.day, currency: r.currency, count: Number(r.count), volume: BigInt(r.volume) }));
}

export interface RequestDay {
  day: string;
  total: number;
  errors: number;
}

/** API requests per day since `since`, and how many were answered 4xx or 5xx. */
export async function requestsPerDay(db: Queryable, scope: Scope, since: Date): Promise<RequestDay[]> {
  const rows = await scoped(db, 'api_request_log', scope)
    .where('id', '>=', uuidv7LowerBound(since))
    .select([
      DAY.as('day'),
      sql<string>`count(*)::text`.as('total'),
      sql<string>`count(*) filter (where status_class >= 4)::text`.as('errors'),
    ])
    .groupBy(sql`1`)
    .execute();
  return rows.map((r) => ({ day: r.day, total: Number(r.total), errors: Number(r.errors) }));
}

export interface DeliveryDay {
  day: string;
  sent: number;
  failed: number;
}

/** Webhook deliveries created per day since `since`: delivered (sent) and given up (failed). */
export async function deliveriesPerDay(db: Queryable, scope: Scope, since: Date): Promise<DeliveryDay[]> {
  const rows = await scoped(db, 'webhook_deliveries', scope)
    .where('id', '>=', uuidv7LowerBound(since))
    .select([
      DAY.as('day'),
      sql<string>`count(*) filter (where status = 'sent')::text`.as('sent'),
      sql<string>`count(*) filter (where status = 'failed')::text`.as('failed'),
    ])
    .groupBy(sql`1`)
    .execute();
  return rows.map((r) => ({ day: r.day, sent: Number(r.sent), failed: Number(r.failed) }));
}

/**
 * Everything the overview shows, read in `trx`: the caller's read-only repeatable-read
 * transaction, so that every figure on the page is of the same moment. Read side by side on
 * separate connections, a request logged between two reads could tick the checklist while the
 * chart beside it still counted no request that day.
 */
export async function readOverview(trx: Trx, scope: Scope, since: Date, recent: number) {
  const [balances, steps, transfers, events, transferDays, requestDays, deliveryDays] = await Promise.all([
    balancesByCurrency(trx, scope),
    checklist(trx, scope),
    recentTransfers(trx, scope, recent),
    recentEvents(trx, scope, recent),
    transfersPerDay(trx, scope, since),
    requestsPerDay(trx, scope, since),
    deliveriesPerDay(trx, scope, since),
  ]);
  return { balances, steps, transfers, events, transferDays, requestDays, deliveryDays };
}
