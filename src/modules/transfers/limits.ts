import type { CompiledQuery } from 'kysely';
import type { Config } from '../../config.js';
import type { Queryable } from '../../db/client.js';
import { onGenericPlan } from '../../db/generic-plan.js';
import type { Writer } from '../../db/write-set.js';
import { scopeKey, type RequestContext, type Scope } from '../../core/context.js';
import type { AppError } from '../../core/errors.js';
import { transactionLimitRefusal } from '../features/service.js';
import { approvedLevelsOf, approvedLevelsStatement } from '../kyc/service.js';
import type { KycLevel } from '../kyc/schema.js';
import * as repo from './repo.js';
import { addSpend, clearSpend, readSpendStatement, spendKeyString, spendOf, utcDay, type SpendKey } from './spend-repo.js';

/** A movement out of a customer's account, as the gate sees it. */
export type Move = { ctx: Scope; customerId: string; currency: string };

/** Counts a movement that has no limit of its own (card funding) in the customer's daily total. */
export async function countSpend(to: Writer, ctx: Scope, customerId: string | null, currency: string, amount: bigint, at = new Date()) {
  if (customerId === null) return;
  await addSpend(to, [{ key: { scope: ctx, customerId, currency, day: utcDay(at) }, amount }]);
}

/**
 * The daily limit's reset as a test clock sees it: the clock passed midnight UTC, so what the
 * environment's customers spent counts no more (real time needs no reset: each day has its own
 * counters).
 */
export async function resetDailySpending(db: Queryable, scope: Scope): Promise<void> {
  await clearSpend(db, scope);
}

/** Gives a failed or returned payout's amount back to the day it was counted on. */
export async function refundSpend(
  trx: Queryable,
  ctx: Scope,
  customerId: string | null,
  currency: string,
  amount: bigint,
  createdAt: Date,
) {
  await countSpend(trx, ctx, customerId, currency, -amount, createdAt);
}

/**
 * KYC limits for a batch of movements, decided in memory: `open` reads every sending customer's
 * approved level (one query per business), takes their spending locks (one statement, key
 * order: after the account rows, before the balance rows — the order every movement uses) and
 * reads their counters for today (one statement). `check` then judges each movement in arrival
 * order, counting what earlier movements of the batch added; `flush` writes the counters.
 */
export class SpendingGate {
  private readonly added = new Map<string, { key: SpendKey; amount: bigint }>();

  private constructor(
    private readonly config: Config,
    private readonly levels: Map<string, KycLevel>,
    private readonly spent: Map<string, bigint>,
    private readonly day: string,
    /** The customers it was opened for: checking another would judge it with no level and no spending. */
    private readonly customers: ReadonlySet<string>,
  ) {}

  static async open(trx: Queryable, config: Config, moves: Move[]): Promise<SpendingGate> {
    const plan = SpendingGate.plan(trx, config, moves);
    const rows: unknown[][] = [];
    for (const statement of plan.statements) rows.push((await trx.executeQuery(statement)).rows);
    return plan.open(rows);
  }

  /**
   * The statements that open a gate for `moves`, in lock order (none without a customer): each
   * business's KYC levels, the spending locks, today's counters (on a generic plan: three
   * statements, db/generic-plan.ts); `open` builds the gate from their rows. SpendingGate.open
   * sends them one by one. A batch that knows its senders before it reads their accounts sends
   * them with its other first locks, in one round trip (transfers/locks.ts).
   */
  static plan(
    db: Queryable,
    config: Config,
    moves: Move[],
  ): { statements: CompiledQuery<unknown>[]; open(rows: unknown[][]): SpendingGate } {
    const day = utcDay(new Date());
    const byScope = new Map<string, { scope: Scope; customers: Set<string> }>();
    for (const m of moves) {
      const entry = byScope.get(scopeKey(m.ctx)) ?? { scope: m.ctx, customers: new Set<string>() };
      entry.customers.add(m.customerId);
      byScope.set(scopeKey(m.ctx), entry);
    }
    const opened = new Set(moves.map((m) => `${scopeKey(m.ctx)}:${m.customerId}`));
    if (moves.length === 0) return { statements: [], open: () => new SpendingGate(config, new Map(), new Map(), day, opened) };
    const levelStatements = [...byScope.values()].map(({ scope, customers }) => approvedLevelsStatement(db, scope, [...customers]));
    const keys = moves.map((m) => ({ scope: m.ctx, customerId: m.customerId, currency: m.currency, day }));
    const counters = readSpendStatement(db, keys);
    const statements = [
      ...levelStatements,
      repo.lockSpendingKeysStatement(
        db,
        moves.map((m) => repo.spendingKey(m.ctx, m.customerId)),
      ),
      // Today's counters are joined to the keys' arrays: re-planned at every batch unless sent on a generic plan.
      ...onGenericPlan(db, counters),
    ];
    const countersAt = statements.indexOf(counters);
    return {
      statements,
      open(rows) {
        const levels = new Map<string, KycLevel>();
        for (const cases of rows.slice(0, levelStatements.length)) {
          for (const [customer, level] of approvedLevelsOf(cases as Parameters<typeof approvedLevelsOf>[0])) levels.set(customer, level);
        }
        const spent = spendOf(rows[countersAt] as Parameters<typeof spendOf>[0]);
        return new SpendingGate(config, levels, spent, day, opened);
      },
    };
  }

  private key(ctx: Scope, customerId: string, currency: string): SpendKey {
    return { scope: { tenantId: ctx.tenantId, environment: ctx.environment }, customerId, currency, day: this.day };
  }

  check(ctx: RequestContext, customerId: string, currency: string, amount: bigint): AppError | undefined {
    this.assertOpenedFor(ctx, customerId);
    const id = spendKeyString(this.key(ctx, customerId, currency));
    const spent = (this.spent.get(id) ?? 0n) + (this.added.get(id)?.amount ?? 0n);
    return transactionLimitRefusal(ctx, this.levels.get(customerId), currency, amount, spent, this.config);
  }

  add(ctx: Scope, customerId: string, currency: string, amount: bigint): void {
    this.assertOpenedFor(ctx, customerId);
    const key = this.key(ctx, customerId, currency);
    const id = spendKeyString(key);
    this.added.set(id, { key, amount: (this.added.get(id)?.amount ?? 0n) + amount });
  }

  private assertOpenedFor(ctx: Scope, customerId: string): void {
    if (!this.customers.has(`${scopeKey(ctx)}:${customerId}`))
      throw new Error(`the spending gate was not opened for customer ${customerId}`);
  }

  async flush(to: Writer): Promise<void> {
    await addSpend(to, [...this.added.values()]);
    this.added.clear();
  }
}
