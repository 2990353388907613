import { sql, type ColumnType, type Selectable } from 'kysely';
import type { Queryable } from '../db/client.js';
import { scoped, scopedUpdate } from '../db/scoped.js';
import { newId } from '../lib/ids.js';
import type { RequestContext } from '../core/context.js';
import { valuesOf } from '../db/values.js';

type LedgerScope = Pick<RequestContext, 'tenantId' | 'environment'>;
import type { PayeeDetails, PayoutState, ScopedPayout } from './payouts.js';
import { REAL_TIME, type Timeline } from '../core/clock.js';
import { inTimeline, nowOf } from '../db/timeline.js';

export interface RailPayoutsTable {
  id: string;
  tenant_id: string;
  environment: string;
  transfer_id: string;
  connector: string;
  rail: string;
  amount: bigint;
  currency: string;
  payee: ColumnType<PayeeDetails, string, never>;
  state: ColumnType<PayoutState, PayoutState | undefined, PayoutState>;
  reason: string | null;
  settle_after: ColumnType<Date | null, Date | null, Date | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../db/types.js' {
  interface Database {
    rail_payouts: RailPayoutsTable;
  }
}

export type RailPayoutRow = Selectable<RailPayoutsTable>;

/**
 * Records submitted payouts in one statement, once per transfer: a payout submitted again keeps
 * the row it has (the unique transfer_id). `timerUnlessFiled`: no settlement timer for a payout
 * whose currency a bank connection of its environment holds (its files settle it).
 */
export async function insertPayouts(
  db: Queryable,
  connector: string,
  payouts: ScopedPayout[],
  settleAfter: Date | null,
  options: { timerUnlessFiled?: boolean } = {},
): Promise<void> {
  if (payouts.length === 0) return;
  await db
    .insertInto('rail_payouts')
    .values(
      payouts.map(({ scope, payout }) => ({
        id: newId(),
        tenant_id: scope.tenantId,
        environment: scope.environment,
        transfer_id: payout.transferId,
        connector,
        rail: payout.rail,
        amount: payout.amount,
        currency: payout.currency,
        payee: JSON.stringify(payout.payee),
        // A payout in a currency an active bank connection holds waits for the bank's files, not a timer.
        settle_after:
          options.timerUnlessFiled && settleAfter
            ? // eslint-disable-next-line no-restricted-syntax -- bank connections belong to the platform, not to a business
              sql<Date | null>`case when exists (select 1 from bank_connections b
                where b.environment = ${scope.environment} and b.currency = ${payout.currency} and b.status = 'active')
                then null else ${settleAfter}::timestamptz end`
            : settleAfter,
      })),
    )
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export async function findPayout(db: Queryable, scope: LedgerScope, transferId: string) {
  return scoped(db, 'rail_payouts', scope).selectAll().where('transfer_id', '=', transferId).executeTakeFirst();
}

/**
 * Moves a payout from one of `from` to `to`, at most once: the conditional update is the guard
 * that makes a rail outcome take effect exactly once, however many callers race for it.
 */
export async function movePayout(
  db: Queryable,
  scope: LedgerScope,
  transferId: string,
  from: PayoutState[],
  to: PayoutState,
  reason: string | null,
): Promise<RailPayoutRow | undefined> {
  return scopedUpdate(db, 'rail_payouts', scope)
    .set({ state: to, reason, updated_at: new Date() })
    .where('transfer_id', '=', transferId)
    .where('state', 'in', from)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Moves the rail payouts of many transfers (locked in this transaction) from `submitted` to
 * `settled` in one statement, as movePayout does one; returns the transfer ids it moved.
 */
export async function settlePayouts(db: Queryable, payouts: { scope: LedgerScope; transferId: string }[]): Promise<Set<string>> {
  if (payouts.length === 0) return new Set();
  // eslint-disable-next-line no-restricted-syntax -- set-based over payouts of several businesses, each row matched on its own scope
  const result = await sql<{ transfer_id: string }>`
    update rail_payouts r set state = 'settled', reason = null, updated_at = now()
    from ${valuesOf(
      'u',
      { t: 'uuid', e: 'text', id: 'uuid' },
      payouts.map((p) => [p.scope.tenantId, p.scope.environment, p.transferId]),
    )}
    where r.tenant_id = u.t and r.environment = u.e and r.transfer_id = u.id and r.state = 'submitted'
    returning r.transfer_id`.execute(db);
  return new Set(result.rows.map((r) => r.transfer_id));
}

/**
 * Due sandbox payouts, claimed for `leaseSeconds` by pushing settle_after forward (so another
 * worker skips them; FOR UPDATE SKIP LOCKED keeps concurrent claimers apart on PostgreSQL). Only
 * those whose transfer the dispatch job has recorded `processing`: a payout handed to the rail
 * whose transfer is still `pending` (dispatch submits, then records) cannot settle yet, and
 * claimed it would wait out the whole lease.
 */
export async function claimDuePayouts(db: Queryable, limit: number, leaseSeconds: number, t: Timeline = REAL_TIME) {
  // eslint-disable-next-line no-restricted-syntax -- a job's claim across businesses, each transfer matched on its own payout's scope
  const result = await sql<{ tenant_id: string; environment: string; transfer_id: string }>`
    update rail_payouts set settle_after = ${nowOf(t)} + make_interval(secs => ${leaseSeconds})
    where id in (
      select r.id from rail_payouts r
      where r.state = 'submitted' and r.settle_after is not null and r.settle_after <= ${nowOf(t)} and ${inTimeline(t, 'r')}
        and exists (
          select 1 from transfers t
          where t.id = r.transfer_id and t.tenant_id = r.tenant_id and t.environment = r.environment and t.status = 'processing')
      order by r.settle_after limit ${limit}
      for update of r skip locked)
    returning tenant_id, environment, transfer_id`.execute(db);
  return result.rows;
}

/** Operator lookup by transfer id alone (the CLI has no API key to scope it). */
export async function findPayoutByTransfer(db: Queryable, transferId: string) {
  return db.selectFrom('rail_payouts').selectAll().where('transfer_id', '=', transferId).executeTakeFirst();
}
