import type { ColumnType } from 'kysely';
import { sql } from 'kysely';
import type { Queryable } from '../../db/client.js';
import { write, type Writer } from '../../db/write-set.js';
import { valuesOf } from '../../db/values.js';
import type { Scope } from '../../core/context.js';
import { scopedDelete } from '../../db/scoped.js';

export interface CustomerDailySpendTable {
  tenant_id: string;
  environment: string;
  customer_id: string;
  currency: string;
  day: ColumnType<string, string, never>;
  amount: bigint;
}

declare module '../../db/types.js' {
  interface Database {
    customer_daily_spend: CustomerDailySpendTable;
  }
}

/** One counter: a customer's spending in one currency on one UTC day. */
export interface SpendKey {
  scope: Scope;
  customerId: string;
  currency: string;
  /** YYYY-MM-DD, UTC. */
  day: string;
}

export const utcDay = (at: Date) => at.toISOString().slice(0, 10);
export const spendKeyString = (k: SpendKey) => `${k.scope.tenantId}:${k.scope.environment}:${k.customerId}:${k.currency}:${k.day}`;

type SpendRow = { tenant_id: string; environment: string; customer_id: string; currency: string; day: string; amount: bigint };

/**
 * The counters of `keys` (at least one) as a statement its caller sends (db/pipeline.ts); spendOf
 * reads its rows (missing = 0). Read under the customers' spending locks, so no concurrent
 * transfer of theirs can change them before the caller commits.
 */
export function readSpendStatement(db: Queryable, keys: SpendKey[]) {
  // eslint-disable-next-line no-restricted-syntax -- set-based over a batch's customers, each key with its own business and environment
  return sql<SpendRow>`
    select s.tenant_id, s.environment, s.customer_id, s.currency, s.day::text as day, s.amount
    from customer_daily_spend s
    join unnest(${keys.map((k) => k.scope.tenantId)}::uuid[], ${keys.map((k) => k.scope.environment)}::text[],
                ${keys.map((k) => k.customerId)}::uuid[], ${keys.map((k) => k.currency)}::text[], ${keys.map((k) => k.day)}::date[])
      as k(tenant_id, environment, customer_id, currency, day)
      on s.tenant_id = k.tenant_id and s.environment = k.environment and s.customer_id = k.customer_id
        and s.currency = k.currency and s.day = k.day`.compile(db);
}

/** The counters of readSpendStatement's rows, by spendKeyString. */
export function spendOf(rows: SpendRow[]): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const r of rows) {
    const key = {
      scope: { tenantId: r.tenant_id, environment: r.environment as Scope['environment'] },
      customerId: r.customer_id,
      currency: r.currency,
      day: r.day,
    };
    out.set(spendKeyString(key), r.amount);
  }
  return out;
}

/** Adds (or, for a failed payout, subtracts) amounts to counters: one statement for many. */
export async function addSpend(to: Writer, changes: { key: SpendKey; amount: bigint }[]) {
  // One row per counter: a multi-row upsert cannot touch the same row twice.
  const merged = new Map<string, { key: SpendKey; amount: bigint }>();
  for (const c of changes) {
    const id = spendKeyString(c.key);
    merged.set(id, { key: c.key, amount: (merged.get(id)?.amount ?? 0n) + c.amount });
  }
  const all = [...merged.values()];
  await upsertAdd(
    to,
    all.filter((c) => c.amount > 0n),
  );
  await subtract(
    to,
    all.filter((c) => c.amount < 0n),
  );
}

/** Counters and amounts as rows (db/values.ts): u(t, e, c, cur, d, a). */
const counterRows = (list: { key: SpendKey; amount: bigint }[]) =>
  valuesOf(
    'u',
    { t: 'uuid', e: 'text', c: 'uuid', cur: 'text', d: 'date', a: 'bigint' },
    list.map(({ key, amount }) => [key.scope.tenantId, key.scope.environment, key.customerId, key.currency, key.day, amount.toString()]),
  );

async function upsertAdd(to: Writer, list: { key: SpendKey; amount: bigint }[]) {
  if (list.length === 0) return;
  await write(
    to,
    () => sql`
    insert into customer_daily_spend as s (tenant_id, environment, customer_id, currency, day, amount)
    select * from ${counterRows(list)}
    on conflict (tenant_id, environment, customer_id, currency, day) do update set amount = s.amount + excluded.amount`,
  );
}

/** Gives amounts back (failed payouts); a counter never goes below zero (a day before the backfill). */
async function subtract(to: Writer, list: { key: SpendKey; amount: bigint }[]) {
  if (list.length === 0) return;
  await write(
    to,
    // eslint-disable-next-line no-restricted-syntax -- set-based over a batch's customers, each key with its own business and environment
    () => sql`
    update customer_daily_spend s set amount = greatest(0, s.amount + u.a)
    from ${counterRows(list)}
    where s.tenant_id = u.t and s.environment = u.e and s.customer_id = u.c and s.currency = u.cur and s.day = u.d`,
  );
}

/**
 * Forgets every spending counter of one environment: a test clock crossed midnight UTC, so for
 * its business a new day began while the counters (keyed by the wall clock's day) still count
 * the old one.
 */
export async function clearSpend(db: Queryable, scope: Scope): Promise<void> {
  await scopedDelete(db, 'customer_daily_spend', scope).execute();
}
