import type { Trx } from '../../db/client.js';
import { pipelined, type LockPlan } from '../../db/pipeline.js';
import { AppError } from '../../core/errors.js';
import { scopeKey, soleScope } from '../../core/context.js';
import { balanceLockAhead, lockBalances, type LockedAhead } from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import { accountsNamed, checkShape, knownSource, type MovementRequest } from './internal.js';
import { SpendingGate } from './limits.js';
import * as repo from './repo.js';

/** The batch's first locks: the account rows by business, and what was locked with them (when known ahead). */
export interface FirstLocks {
  locked: accounts.LockedAccounts;
  ahead: { gate: SpendingGate; balances: LockedAhead } | undefined;
}

/** Whether a request passes checkShape: one it refuses locks nothing (its refusal is the shape step's to report). */
function isShaped(req: MovementRequest): boolean {
  try {
    checkShape(req.body);
    return true;
  } catch (err) {
    if (err instanceof AppError) return false;
    throw err;
  }
}

/**
 * Lock: the statements of the batch's first locks, in the lock order, and how to read their rows.
 * The account rows (share, one statement per business, ascending id inside); or, when the batch
 * knows before reading a row everything it locks after them (`lockedAhead`), the senders' KYC
 * levels, spending locks and counters, the balance rows and then the account rows, read under
 * the balance locks, all in one round trip. Requests refused by their shape lock nothing. A gathered batch sends them right
 * behind its idempotency claim (movementPipeline); a batch of its own sends them alone (`lock`).
 */
export function lockPlan(trx: Trx, all: MovementRequest[]): LockPlan<FirstLocks> {
  const reqs = all.filter(isShaped);
  const ahead = lockedAhead(trx, reqs);
  if (ahead) return ahead;
  const plan = accounts.lockForMovementsPlan(
    trx,
    reqs.map((req) => ({ ctx: req.ctx, ids: accountsNamed(req.body) })),
  );
  return { statements: plan.statements, read: (rows) => ({ locked: plan.read(rows), ahead: undefined }) };
}

/** The lock plan sent now, in one round trip. */
export async function lock(trx: Trx, reqs: MovementRequest[]): Promise<FirstLocks> {
  const plan = lockPlan(trx, reqs);
  return plan.read(await pipelined(trx, ...plan.statements));
}

/**
 * Every first lock of the batch when it is known before reading a row: one business, internal
 * transfers with no fee, from sources this process has locked before (`knownSource`). Undefined
 * otherwise: the gate, the fee accounts and the balance rows then follow once the account rows
 * are read.
 *
 * The account rows are read last and without a row lock: the balance rows of every account the
 * batch names, locked before them, keep a status change out until the commit (a freeze or a close
 * holds the balance row, migration 1266). A share lock is a WAL record for each row, on every
 * transfer; the balance row is locked anyway.
 */
function lockedAhead(trx: Trx, reqs: MovementRequest[]): LockPlan<FirstLocks> | undefined {
  const ctx = soleScope(reqs);
  const sources = reqs.map(knownSource).filter((source) => source !== undefined);
  if (!ctx || sources.length < reqs.length) return undefined;
  const senders = sources.flatMap((s) => (s.customerId ? [{ ctx, customerId: s.customerId, currency: s.currency }] : []));
  const gate = SpendingGate.plan(trx, reqs[0]!.config, senders);
  const ids = reqs.flatMap((req) => accountsNamed(req.body));
  const balances = balanceLockAhead(trx, ctx, ids);
  const accountRead = accounts.readForMovementStatement(trx, ctx, ids);
  return {
    statements: [...gate.statements, ...balances.statements, accountRead.statement],
    read: (rows) => ({
      locked: new Map([[scopeKey(ctx), accountRead.read(rows.at(-1)!)]]),
      ahead: { gate: gate.open(rows.slice(0, -3)), balances: { ids: balances.ids, rows: rows.at(-2) as LockedAhead['rows'] } },
    }),
  };
}

/**
 * Takes, before the first chunk of a bulk, every lock its chunks will take, in the batch's order:
 * account rows (share), spending locks, balance rows (with the fee accounts that exist), each
 * ascending. Each chunk then locks rows its transaction already holds, without waiting. Locked
 * chunk by chunk, a later chunk could wait for a lower row while holding a higher one from an
 * earlier chunk: two bulks over the same accounts would deadlock.
 */
export async function lockAhead(trx: Trx, reqs: MovementRequest[]): Promise<void> {
  const live = reqs.filter(isShaped);
  const locked = await accounts.lockForMovements(
    trx,
    live.map((req) => ({ ctx: req.ctx, ids: accountsNamed(req.body) })),
  );
  const spending = live.flatMap((req) => {
    const customerId = locked.get(scopeKey(req.ctx))?.get(req.body.source.id)?.customer_id;
    return customerId ? [repo.spendingKey(req.ctx, customerId)] : [];
  });
  await repo.lockSpendingKeys(trx, spending);
  for (const [key, rows] of [...locked].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const ctx = live.find((req) => scopeKey(req.ctx) === key)!.ctx;
    const ids = [...rows.keys()];
    for (const currency of new Set([...rows.values()].map((r) => r.currency))) {
      const fees = await accounts.findBusinessFeeAccount(trx, ctx, currency);
      if (fees) ids.push(fees.id);
    }
    await lockBalances(trx, ctx, [...new Set(ids)]);
  }
}
