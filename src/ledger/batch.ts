import type { CompiledQuery } from 'kysely';
import type { Queryable } from '../db/client.js';
import { inOneStatement, type Writer } from '../db/write-set.js';
import { newId } from '../lib/ids.js';
import { writeBalances, writeHolds, writePostings, type Pending, type Working } from './batch-writes.js';
import * as repo from './repo.js';
import type { Hold, HoldInput, LedgerScope, PostedEntry, PostedTransaction, PostingInput, SystemRole } from './types.js';

/** Why a posting of a batch was refused: decided in memory, reported as a value (never thrown). */
export type PostRefusal = { ok: false; reason: 'insufficient_funds'; accountId: string };
export type PostResult = { ok: true; posting: PostedTransaction } | PostRefusal;
/** Holds taken together (a payout's principal and fee): all of them, or a refusal and none. */
export type HoldsResult = { ok: true; holds: Hold[] } | PostRefusal;

/**
 * Balance rows a caller locked before the batch opened, with the statement that locks its other
 * rows (balanceLockAhead, sent in the same round trip): `ids` are the accounts it asked for.
 */
export interface LockedAhead {
  ids: ReadonlySet<string>;
  rows: repo.LockedBalanceRow[];
}

/**
 * The statements that lock and read the balance rows of `accountIds` in `scope`, ascending, for
 * a caller that sends them together with the statements that must come before them
 * (db/pipeline.ts); PostingBatch.open then takes the rows (`rows`, of the last statement)
 * instead of locking them itself.
 */
export function balanceLockAhead(db: Queryable, scope: LedgerScope, accountIds: string[]) {
  const ids = [...new Set(accountIds)].sort();
  return { ids: new Set(ids), statements: repo.lockScopedBalancesStatements(db, scope, ids) };
}

/**
 * balanceLockAhead for a batch that also moves the business's system accounts of `role` in
 * `currencies` (the FX positions) before it knows their ids: three statements for the caller to
 * send together, after whatever must come before them: the system accounts found, and every
 * balance row locked and read (the system accounts found again by these). `read` answers
 * the system accounts found, by currency (a currency without one has none yet), and the rows
 * locked, for PostingBatch.open.
 */
export function systemBalancesAhead(db: Queryable, scope: LedgerScope, accountIds: string[], role: SystemRole, currencies: string[]) {
  const ids = [...new Set(accountIds)].sort();
  const system = { role, currencies: [...new Set(currencies)].sort() };
  return {
    statements: [
      repo.findSystemAccountsStatement(db, scope, system),
      ...repo.lockScopedBalancesStatements(db, scope, ids, system),
    ] as CompiledQuery<unknown>[],
    read([found, , rows]: unknown[][]): { system: Map<string, string>; ahead: LockedAhead } {
      const system = new Map((found as { id: string; currency: string }[]).map((r) => [r.currency, r.id]));
      return { system, ahead: { ids: new Set([...ids, ...system.values()]), rows: rows as repo.LockedBalanceRow[] } };
    },
  };
}

const availableOf = (w: Working) => w.posted + w.delta - w.pendingDebits - w.pendingDebitsDelta;

/** An accepted posting or hold touched this account: a fresh or reserved one is created. */
function markUsed(w: Working) {
  if (w.fresh) w.fresh.used = true;
  if (w.reserved) w.reserved.used = true;
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
  private readonly holds: { scope: LedgerScope; input: HoldInput; hold: Hold }[] = [];
  /** Pending holds this batch voids (releaseHolds, tryPost releasing them): set voided at flush. */
  private readonly released = new Set<string>();
  /** Pending holds this batch posts (postHolds): set posted, with their transactions, at flush. */
  private readonly posted = new Map<string, { postedAmount: bigint; transactionId: string }>();

  private constructor(
    private readonly balances: Map<string, Working>,
    /** The transaction's now(): the time its ledger rows get (read with the locks, so writes can be deferred). */
    private readonly createdAt: Date,
  ) {}

  static async open(trx: Queryable, accountIds: string[], ahead?: LockedAhead): Promise<PostingBatch> {
    const missing = ahead && accountIds.find((id) => !ahead.ids.has(id));
    if (missing) throw new LedgerInvariantError(`the balance row of ${missing} was not locked ahead`);
    const rows = ahead?.rows ?? (await repo.lockBalancesReturning(trx, [...new Set(accountIds)].sort()));
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
        pendingDebitsDelta: 0n,
        pendingCreditsDelta: 0n,
      });
    }
    return new PostingBatch(map, createdAt);
  }

  /**
   * Adds a system account that does not exist yet (a business's first FX order in a currency
   * needs its fx_position account): `id` is new, so there is no row to lock and nobody else can
   * post to it before this commits. It is created at flush, with its balance, only if an
   * accepted posting used it: a refused one leaves nothing behind, as it would alone.
   */
  addFresh(scope: LedgerScope, id: string, role: SystemRole, currency: string): void {
    this.addUnwritten(id, { scope, currency, allowNegative: true, fresh: { role, used: false } });
  }

  /**
   * Adds an account the caller may create after the decisions (a business's first Fees account,
   * which is an API account, not a ledger system account): `id` is not written yet, so nobody else
   * can post to it before this commits. Postings and holds use it like a locked, empty account.
   * If `used(id)`, the caller creates it (ledger.openAccount: an empty balance row) before the
   * flush, which then adds its deltas as for any other account; otherwise nothing is written.
   */
  addReserved(scope: LedgerScope, id: string, currency: string): void {
    this.addUnwritten(id, { scope, currency, allowNegative: false, reserved: { used: false } });
  }

  /** An account with no row yet (addFresh, addReserved): empty, nothing to lock. */
  private addUnwritten(id: string, account: Pick<Working, 'scope' | 'currency' | 'allowNegative' | 'fresh' | 'reserved'>): void {
    if (this.balances.has(id)) throw new LedgerInvariantError(`ledger account ${id} is already in this batch`);
    this.balances.set(id, { ...account, posted: 0n, pendingDebits: 0n, delta: 0n, pendingDebitsDelta: 0n, pendingCreditsDelta: 0n });
  }

  /** Whether an accepted posting or hold of this batch uses the account (addReserved, addFresh). */
  used(accountId: string): boolean {
    const w = this.balances.get(accountId);
    return Boolean(w?.reserved?.used ?? w?.fresh?.used);
  }

  /** The working (batch-so-far) available balance of a locked account, for reports and tests. */
  available(accountId: string): bigint | undefined {
    const w = this.balances.get(accountId);
    return w ? availableOf(w) : undefined;
  }

  /** The locked balance row of `accountId`, which must belong to `scope` and hold `currency`. */
  private working(scope: LedgerScope, accountId: string, currency: string): Working {
    const w = this.balances.get(accountId);
    if (!w || w.scope.tenantId !== scope.tenantId || w.scope.environment !== scope.environment) {
      throw new LedgerInvariantError(`ledger account ${accountId} is not locked in this batch`);
    }
    if (w.currency !== currency) throw new LedgerInvariantError(`ledger account ${accountId} is ${w.currency}, not ${currency}`);
    return w;
  }

  /** The first account that `debits` (account → amount taken from its available balance) would overdraw. */
  private overdrawn(debits: Map<string, bigint>): PostRefusal | undefined {
    for (const [accountId, amount] of debits) {
      const w = this.balances.get(accountId)!;
      if (amount > 0n && !w.allowNegative && availableOf(w) - amount < 0n) return { ok: false, reason: 'insufficient_funds', accountId };
    }
    return undefined;
  }

  /** The transaction's now(): what this batch's ledger rows are stamped with. */
  get now(): Date {
    return this.createdAt;
  }

  /**
   * Checks and applies a posting against the working balances. `releasing`: pending holds (locked
   * with ledger.lockPendingHolds) voided with it, both or neither: what they reserved is available
   * to the posting, and on a refusal they stay as they were.
   */
  tryPost(scope: LedgerScope, input: PostingInput, releasing: Hold[] = []): PostResult {
    assertBalanced(input);
    const net = new Map<string, bigint>();
    for (const leg of input.legs) {
      this.working(scope, leg.accountId, leg.currency);
      net.set(leg.accountId, (net.get(leg.accountId) ?? 0n) - leg.amount);
    }
    this.releaseHolds(scope, releasing);
    const refusal = this.overdrawn(net);
    if (!refusal) return { ok: true, posting: this.apply(scope, input) };
    this.restore(releasing);
    return refusal;
  }

  /**
   * Voids pending holds, locked with ledger.lockPendingHolds in this transaction: what each
   * reserved on its debit account is available again, and its credit account's pending credit
   * goes. Written at flush. A hold can be released once.
   */
  releaseHolds(scope: LedgerScope, holds: Hold[]): void {
    this.takePending(scope, holds);
    for (const hold of holds) this.released.add(hold.id);
  }

  /**
   * Posts pending holds in full, locked with ledger.lockPendingHolds in this transaction, as
   * ledger.postHold posts one: each becomes a ledger transaction of the hold's kind and reference
   * (its metadata plus hold_id), what it reserved becomes the posted movement, and it is marked
   * posted at flush. Never refused: the hold reserved the funds when it was taken.
   */
  postHolds(scope: LedgerScope, holds: Hold[]): PostedTransaction[] {
    this.takePending(scope, holds);
    return holds.map((hold) => {
      const posting = this.apply(scope, {
        kind: hold.kind,
        reference: hold.reference,
        metadata: { ...hold.metadata, hold_id: hold.id },
        legs: [
          { accountId: hold.debitAccountId, amount: -hold.amount, currency: hold.currency },
          { accountId: hold.creditAccountId, amount: hold.amount, currency: hold.currency },
        ],
      });
      this.posted.set(hold.id, { postedAmount: hold.amount, transactionId: posting.id });
      return posting;
    });
  }

  /** Takes pending holds off the working balances' pending sides (each once per batch), after checking them all. */
  private takePending(scope: LedgerScope, holds: Hold[]): void {
    const ids = new Set<string>();
    for (const hold of holds) {
      if (hold.status !== 'pending') throw new LedgerInvariantError(`hold ${hold.id} is ${hold.status}`);
      if (this.released.has(hold.id) || this.posted.has(hold.id) || ids.has(hold.id)) {
        throw new LedgerInvariantError(`hold ${hold.id} is finished twice`);
      }
      ids.add(hold.id);
      this.working(scope, hold.debitAccountId, hold.currency);
      this.working(scope, hold.creditAccountId, hold.currency);
    }
    for (const hold of holds) {
      this.balances.get(hold.debitAccountId)!.pendingDebitsDelta -= hold.amount;
      this.balances.get(hold.creditAccountId)!.pendingCreditsDelta -= hold.amount;
    }
  }

  /** Undoes releaseHolds (a posting that released them was refused). */
  private restore(holds: Hold[]): void {
    for (const hold of holds) {
      this.balances.get(hold.debitAccountId)!.pendingDebitsDelta += hold.amount;
      this.balances.get(hold.creditAccountId)!.pendingCreditsDelta += hold.amount;
      this.released.delete(hold.id);
    }
  }

  /**
   * Reserves each hold's amount on its debit account (pending, not posted), all or none: a
   * payout's principal and fee are checked together against the working balances. The rows are
   * written at flush, like postings. Posting or voiding a hold later is ledger.postHold/voidHold.
   */
  tryHolds(scope: LedgerScope, inputs: HoldInput[]): HoldsResult {
    const debits = new Map<string, bigint>();
    for (const input of inputs) {
      if (input.amount <= 0n) throw new LedgerInvariantError('a hold must be positive');
      if (input.debitAccountId === input.creditAccountId) throw new LedgerInvariantError('a hold needs two accounts');
      this.working(scope, input.debitAccountId, input.currency);
      this.working(scope, input.creditAccountId, input.currency);
      debits.set(input.debitAccountId, (debits.get(input.debitAccountId) ?? 0n) + input.amount);
    }
    const refusal = this.overdrawn(debits);
    if (refusal) return refusal;
    const holds = inputs.map((input) => {
      const [debit, credit] = [this.balances.get(input.debitAccountId)!, this.balances.get(input.creditAccountId)!];
      debit.pendingDebitsDelta += input.amount;
      credit.pendingCreditsDelta += input.amount;
      for (const w of [debit, credit]) markUsed(w);
      const hold: Hold = {
        id: newId(),
        debitAccountId: input.debitAccountId,
        creditAccountId: input.creditAccountId,
        currency: input.currency,
        amount: input.amount,
        status: 'pending',
        postedAmount: null,
        kind: input.kind,
        reference: input.reference ?? null,
        metadata: input.metadata ?? {},
        transactionId: null,
      };
      this.holds.push({ scope, input, hold });
      return hold;
    });
    return { ok: true, holds };
  }

  /** Applies an accepted posting to the working balances, legs in lock order (as ledger.post). */
  private apply(scope: LedgerScope, input: PostingInput): PostedTransaction {
    const legs = [...input.legs].sort((a, b) =>
      a.accountId < b.accountId ? -1 : a.accountId > b.accountId ? 1 : a.amount > b.amount ? -1 : 1,
    );
    const entries: PostedEntry[] = legs.map((leg) => {
      const w = this.balances.get(leg.accountId)!;
      w.delta += leg.amount;
      markUsed(w);
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
    if (this.pending.length === 0 && this.holds.length === 0 && this.released.size === 0 && this.posted.size === 0) return;
    // One statement for all of it, even alone (ledger.post): the parts touch different rows.
    await inOneStatement(to, async (set) => {
      const written = await writeBalances(set, this.balances);
      await writeHolds(set, this.holds, this.released, this.posted);
      await writePostings(set, this.pending);
      for (const w of written) {
        w.posted += w.delta;
        w.pendingDebits += w.pendingDebitsDelta;
        w.delta = w.pendingDebitsDelta = w.pendingCreditsDelta = 0n;
        // Created now: a later flush of this batch updates its row like any other.
        delete w.fresh;
      }
      this.pending.length = 0;
      this.holds.length = 0;
      this.released.clear();
      this.posted.clear();
    });
  }
}
