import type { Queryable } from '../../db/client.js';
import { pipelined, type LockPlan } from '../../db/pipeline.js';
import { groupByScope, scopeKey, type Scope } from '../../core/context.js';
import * as repo from './repo.js';

type AccountRow = repo.AccountRow;
type MovementAccountRow = repo.MovementAccountRow;

/**
 * For money movements: the accounts, share-locked in id order until the caller commits (a freeze
 * or a close waits for in-flight movements). Missing ids are absent (callers answer 404).
 */
export async function lockForMovement(trx: Queryable, ctx: Scope, ids: string[]): Promise<Map<string, AccountRow>> {
  const unique = [...new Set(ids)].sort();
  return remember(ctx, await repo.lockAccountsShared(trx, ctx, unique));
}

/**
 * lockForMovement as a statement, for a caller that sends it together with what it locks after
 * the accounts (db/pipeline.ts): they run in that order, so the lock order of every movement still
 * holds. `read` takes the statement's rows.
 */
export function lockForMovementStatement(trx: Queryable, ctx: Scope, ids: string[]) {
  return movementAccounts(trx, ctx, ids, 'share');
}

/**
 * The accounts of a movement that holds their balance rows already (sent after its balance lock,
 * in the same round trip): read without a row lock. A freeze or a close holds the balance row
 * from before its change to its commit (migration 1266), so it waits for the movement, or the
 * movement waits for it and reads its new status. `read` takes the statement's rows.
 */
export function readForMovementStatement(trx: Queryable, ctx: Scope, ids: string[]) {
  return movementAccounts(trx, ctx, ids, 'none');
}

function movementAccounts(trx: Queryable, ctx: Scope, ids: string[], lock: 'share' | 'none') {
  return {
    statement: repo.movementAccountsStatement(trx, ctx, [...new Set(ids)].sort(), lock),
    read: (rows: unknown[]) => remember(ctx, rows as MovementAccountRow[]),
  };
}

/** What never changes about an account: its business and environment, its owner and currency. */
export interface KnownAccount {
  scope: string;
  customerId: string | null;
  currency: string;
}
/**
 * Why a process-global cache: a batch must send its spending locks and balance locks right behind
 * its account locks, in the same round trip, to be two round trips in all; it can only when it
 * knows each source's owner and currency before the row is read. These never change, so a hint
 * remembered from an earlier lock cannot be stale; every check still uses the locked row, and a
 * wrong or missing hint only costs the round trips. It is not a second source of account data.
 * About 200 bytes an entry; the least recently locked are forgotten first.
 */
const known = new Map<string, KnownAccount>();
const KNOWN_MAX = 50_000;

/** Remembers what never changes about the accounts a movement locked (knownAccount). */
function remember<Row extends MovementAccountRow>(ctx: Scope, rows: Row[]): Map<string, Row> {
  const scope = scopeKey(ctx);
  for (const r of rows) {
    // Deleted and set again: a Map keeps insertion order, so the first key is the least recently locked.
    if (!known.delete(r.id) && known.size >= KNOWN_MAX) known.delete(known.keys().next().value!);
    known.set(r.id, { scope, customerId: r.customer_id, currency: r.currency });
  }
  return new Map(rows.map((r) => [r.id, r]));
}

/** The owner and currency of an account of `ctx` that this process locked for a movement before, if it did (a hint). */
export function knownAccount(ctx: Scope, id: string): KnownAccount | undefined {
  const account = known.get(id);
  return account?.scope === scopeKey(ctx) ? account : undefined;
}

/**
 * lockForMovement for a batch that may span businesses, as statements to send in one round trip:
 * one per business and environment, in key order (ascending id inside). `read` gives the locked
 * rows by scopeKey, then by id.
 */
export function lockForMovementsPlan(trx: Queryable, wanted: { ctx: Scope; ids: string[] }[]): LockPlan<LockedAccounts> {
  const groups = groupByScope(wanted.map((w) => ({ ctx: w.ctx, values: w.ids })));
  const locks = groups.map(({ ctx, values }) => lockForMovementStatement(trx, ctx, values));
  return {
    statements: locks.map((l) => l.statement),
    read: (rows) => new Map(groups.map(({ key }, i) => [key, locks[i]!.read(rows[i]!)])),
  };
}

/** The accounts a batch share-locked, by scopeKey, then by id. */
export type LockedAccounts = Map<string, Map<string, MovementAccountRow>>;

/** lockForMovementsPlan, sent now. */
export async function lockForMovements(trx: Queryable, wanted: { ctx: Scope; ids: string[] }[]): Promise<LockedAccounts> {
  const plan = lockForMovementsPlan(trx, wanted);
  return plan.read(await pipelined(trx, ...plan.statements));
}
