import { sql, type ColumnType, type Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageQuery } from '../../db/pagination.js';
import { findScoped, scoped, scopedDelete, scopedUpdate, type Lock } from '../../db/scoped.js';

/** A sandbox test clock (migration 1200). */
export interface TestClocksTable {
  id: string;
  tenant_id: string;
  environment: string;
  name: string | null;
  frozen_time: Date;
  target_time: Date | null;
  status: 'ready' | 'advancing';
  attached: boolean;
  lease_until: Date | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    test_clocks: TestClocksTable;
  }
}

export type ClockRow = Selectable<TestClocksTable>;

export async function insertClock(db: Queryable, scope: Scope, row: { id: string; name: string | null; frozen_time: Date }) {
  return db
    .insertInto('test_clocks')
    .values({
      ...row,
      tenant_id: scope.tenantId,
      environment: scope.environment,
      status: 'ready',
      attached: false,
      target_time: null,
      lease_until: null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function findClock(db: Queryable, scope: Scope, id: string, lock?: Lock): Promise<ClockRow | undefined> {
  return findScoped(db, 'test_clocks', scope, id, lock);
}

export function listClocks(db: Queryable, scope: Scope, query: PageQuery): Promise<Page<ClockRow>> {
  return paginate<ClockRow>(db, scoped(db, 'test_clocks', scope), 'test_clocks.id', query, (qb) => qb.selectAll());
}

/** The clock the environment is attached to, locked (none: it runs on real time). */
export function attachedClock(db: Queryable, scope: Scope): Promise<ClockRow | undefined> {
  return scoped(db, 'test_clocks', scope).selectAll().where('attached', '=', true).forUpdate().executeTakeFirst();
}

export function updateClock(
  db: Queryable,
  scope: Scope,
  id: string,
  set: Partial<Pick<ClockRow, 'frozen_time' | 'target_time' | 'status' | 'attached' | 'lease_until'>>,
): Promise<ClockRow | undefined> {
  return scopedUpdate(db, 'test_clocks', scope)
    .set({ ...set, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteClock(db: Queryable, scope: Scope, id: string): Promise<void> {
  await scopedDelete(db, 'test_clocks', scope).where('id', '=', id).execute();
}

/**
 * One clock whose advance is waiting for a worker (or whose worker stopped: its lease ran out),
 * leased to the caller for `leaseSeconds` so no other worker walks it at the same time.
 */
export async function leaseAdvancingClock(db: Queryable, leaseSeconds: number): Promise<ClockRow | undefined> {
  const { rows } = await sql<ClockRow>`
    update test_clocks set lease_until = now() + make_interval(secs => ${leaseSeconds})
    where id = (
      select id from test_clocks
      where status = 'advancing' and (lease_until is null or lease_until < now())
      order by updated_at limit 1
      for update skip locked)
    returning *`.execute(db);
  return rows[0];
}

/**
 * The first instant after `after` at which something of the environment falls due for a worker
 * (the instant the worker's own comparison first holds): a clock's advance stops there next.
 */
export async function nextDueAfter(db: Queryable, scope: Scope, after: Date): Promise<Date | null> {
  const first = (q: { executeTakeFirst(): Promise<{ at: Date | string | null } | undefined> }) =>
    q.executeTakeFirst().then((r) => (r?.at ? new Date(r.at) : null));
  const min = (column: string) => sql<Date | null>`min(${sql.ref(column)})`.as('at');
  const candidates = await Promise.all([
    first(scoped(db, 'collections', scope).select(min('expires_at')).where('status', '=', 'pending').where('expires_at', '>', after)),
    // Authorizations expire once now is past expires_at (cards/repo.ts), a millisecond later.
    first(
      scoped(db, 'card_authorizations', scope)
        .select(sql<Date | null>`min(expires_at) + interval '1 millisecond'`.as('at'))
        .where('status', '=', 'approved')
        .where('expires_at', '>=', after),
    ),
    first(scoped(db, 'fx_orders', scope).select(min('expires_at')).where('status', '=', 'pending').where('expires_at', '>', after)),
    first(
      scoped(db, 'approvals', scope).select(min('expires_at')).where('status', '=', 'waiting_approval').where('expires_at', '>', after),
    ),
    first(scoped(db, 'rail_payouts', scope).select(min('settle_after')).where('state', '=', 'submitted').where('settle_after', '>', after)),
  ]);
  const times = candidates.filter((d): d is Date => d !== null).map((d) => d.getTime());
  return times.length === 0 ? null : new Date(Math.min(...times));
}
