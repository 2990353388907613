import type { Queryable } from '../db/client.js';
import { inOneStatement, type Writer } from '../db/write-set.js';
import { newId } from '../lib/ids.js';
import * as repo from './repo.js';
import type { LedgerScope, PostedEntry, PostedTransaction, PostingInput } from './types.js';

/** Why a posting of a batch was refused: decided in memory, reported as a value (never thrown). */
export type PostRefusal = { ok: false; reason: 'insufficient_funds'; accountId: string };
export type PostResult = { ok: true; posting: PostedTransaction } | PostRefusal;

interface Working {
  scope: LedgerScope;
  currency: string;
  allowNegative: boolean;
  posted: bigint;
  pendingDebits: bigint;
  /** What this batch added so far (written by one UPDATE at flush). */
  delta: bigint;
}

interface Pending {
  scope: LedgerScope;
  input: PostingInput;
  posting: PostedTransaction;
}

/** A programming error (unbalanced posting, unknown account): a 500, never a client's fault. */
export class LedgerInvariantError extends Error {
  override name = 'LedgerInvariantError';
}

function assertBalanced(input: PostingInput): void {
  const sums = new Map<string, bigint>();
  if (input.legs.length < 2) throw new LedgerInvariantError('a posting needs at least two legs');
  for (const leg of input.legs) {
    if (leg.amount === 0n) throw new LedgerInvariantError('a leg of zero');
    sums.set(leg.currency, (sums.get(leg.currency) ?? 0n) + leg.amount);
  }
  for (const [currency, sum] of sums) if (sum !== 0n) throw new LedgerInvariantError(`unbalanced posting: ${currency} legs sum to ${sum}`);
}

/**
 * A batch of postings validated in memory. `open` locks every balance row the batch may touch
 * in ONE statement, in ascending account id (the same order as single postings, so batches and
 * lone movements cannot deadlock), and reads them. `tryPost` checks a posting against the
 * working balances (in the caller's order: earlier postings of the batch count) and either
 * applies it in memory or refuses it without changing anything. `flush` writes every accepted
 * posting: one UPDATE for all balance deltas, one INSERT for transactions and entries.
 * The balance rows stay locked until the caller commits, so what was checked is what commits;
 * the CHECK constraint on balances still backs the no-overdraft rule up.
 */
export class PostingBatch {
  private readonly pending: Pending[] = [];

  private constructor(
    private readonly balances: Map<string, Working>,
    /** The transaction's now(): the time its ledger rows get (read with the locks, so writes can be deferred). */
    private readonly createdAt: Date,
  ) {}

  static async open(trx: Queryable, accountIds: string[]): Promise<PostingBatch> {
    const rows = await repo.lockBalancesReturning(trx, [...new Set(accountIds)].sort());
    const map = new Map<string, Working>();
    const createdAt = rows[0]?.tx_now ?? new Date();
    for (const r of rows) {
      map.set(r.account_id, {
        scope: { tenantId: r.tenant_id, environment: r.environment as LedgerScope['environment'] },
        currency: r.currency,
        allowNegative: r.allow_negative,
        posted: r.posted,
        pendingDebits: r.pending_debits,
        delta: 0n,
      });
    }
    return new PostingBatch(map, createdAt);
  }

  /** The working (batch-so-far) available balance of a locked account, for reports and tests. */
  available(accountId: string): bigint | undefined {
    const w = this.balances.get(accountId);
    return w ? w.posted + w.delta - w.pendingDebits : undefined;
  }

  tryPost(scope: LedgerScope, input: PostingInput): PostResult {
    assertBalanced(input);
    const net = new Map<string, bigint>();
    for (const leg of input.legs) {
      const w = this.balances.get(leg.accountId);
      if (!w || w.scope.tenantId !== scope.tenantId || w.scope.environment !== scope.environment) {
        throw new LedgerInvariantError(`ledger account ${leg.accountId} is not locked in this batch`);
      }
      if (w.currency !== leg.currency)
        throw new LedgerInvariantError(`ledger account ${leg.accountId} is ${w.currency}, leg is ${leg.currency}`);
      net.set(leg.accountId, (net.get(leg.accountId) ?? 0n) + leg.amount);
    }
    for (const [accountId, amount] of net) {
      const w = this.balances.get(accountId)!;
      if (amount < 0n && !w.allowNegative && w.posted + w.delta + amount - w.pendingDebits < 0n) {
        return { ok: false, reason: 'insufficient_funds', accountId };
      }
    }
    return { ok: true, posting: this.apply(scope, input) };
  }

  /** Applies an accepted posting to the working balances, legs in lock order (as ledger.post). */
  private apply(scope: LedgerScope, input: PostingInput): PostedTransaction {
    const legs = [...input.legs].sort((a, b) =>
      a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : a.amount > b.amount ? -1 : 1,
    );
    const entries: PostedEntry[] = legs.map((leg) => {
      const w = this.balances.get(leg.accountId)!;
      w.delta += leg.amount;
      return { id: newId(), accountId: leg.accountId, amount: leg.amount, currency: leg.currency, balanceAfter: w.posted + w.delta };
    });
    const posting: PostedTransaction = {
      id: newId(),
      kind: input.kind,
      reference: input.reference ?? null,
      createdAt: this.createdAt,
      entries,
    };
    this.pending.push({ scope, input, posting });
    return posting;
  }

  /**
   * Writes every accepted posting: balance deltas, transactions and entries, whatever the batch
   * size; on a transaction now, or deferred into the caller's WriteSet (db/write-set.ts).
   */
  async flush(to: Writer): Promise<void> {
    if (this.pending.length === 0) return;
    // One statement for all of it, even alone (ledger.post): the parts touch different rows.
    await inOneStatement(to, async (set) => {
      const deltas = [...this.balances].filter(([, w]) => w.delta !== 0n);
      await repo.addPostedDeltas(
        set,
        deltas.map(([id, w]) => ({ accountId: id, delta: w.delta })),
      );
      await repo.insertTransactionsWithEntries(
        set,
        this.pending.map((p) => ({
          scope: p.scope,
          row: { id: p.posting.id, kind: p.input.kind, reference: p.input.reference ?? null, metadata: p.input.metadata ?? {} },
          entries: p.posting.entries.map((e) => ({
            id: e.id,
            account_id: e.accountId,
            currency: e.currency,
            amount: e.amount,
            balance_after: e.balanceAfter,
          })),
        })),
      );
      for (const [, w] of deltas) {
        w.posted += w.delta;
        w.delta = 0n;
      }
      this.pending.length = 0;
    });
  }
}
