import type { WriteSet } from '../db/write-set.js';
import * as repo from './repo.js';
import type { Hold, HoldInput, LedgerScope, PostedTransaction, PostingInput, SystemRole } from './types.js';

// The parts of PostingBatch.flush's one write statement, in its order: system accounts created,
// balance deltas, holds taken, voided and posted, transactions with their entries.

export interface Working {
  scope: LedgerScope;
  currency: string;
  allowNegative: boolean;
  posted: bigint;
  pendingDebits: bigint;
  /** What this batch added so far to posted, pending debits and pending credits (one UPDATE at flush). */
  delta: bigint;
  pendingDebitsDelta: bigint;
  pendingCreditsDelta: bigint;
  /** A system account this batch creates (addFresh): inserted at flush if a posting or hold used it. */
  fresh?: { role: SystemRole; used: boolean };
  /** An account the caller creates before the flush if a posting or hold used it (addReserved). */
  reserved?: { used: boolean };
}

export interface Pending {
  scope: LedgerScope;
  input: PostingInput;
  posting: PostedTransaction;
}

/** Balance rows: the system accounts the batch created and used, the deltas of the others. The working rows written. */
export async function writeBalances(set: WriteSet, balances: Map<string, Working>): Promise<Working[]> {
  const deltas = [...balances].filter(
    ([, w]) => !w.fresh && (w.delta !== 0n || w.pendingDebitsDelta !== 0n || w.pendingCreditsDelta !== 0n),
  );
  const created = [...balances].filter(([, w]) => w.fresh?.used);
  await repo.insertFreshSystemAccounts(
    set,
    created.map(([id, w]) => ({
      id,
      scope: w.scope,
      role: w.fresh!.role,
      currency: w.currency,
      posted: w.delta,
      pendingDebits: w.pendingDebitsDelta,
      pendingCredits: w.pendingCreditsDelta,
    })),
  );
  await repo.addBalanceDeltas(
    set,
    deltas.map(([id, w]) => ({
      accountId: id,
      posted: w.delta,
      pendingDebits: w.pendingDebitsDelta,
      pendingCredits: w.pendingCreditsDelta,
    })),
  );
  return [...deltas, ...created].map(([, w]) => w);
}

/** Holds: the ones taken, voided and posted. */
export async function writeHolds(
  set: WriteSet,
  holds: { scope: LedgerScope; input: HoldInput; hold: Hold }[],
  released: Set<string>,
  posted: Map<string, { postedAmount: bigint; transactionId: string }>,
): Promise<void> {
  await repo.insertHolds(
    set,
    holds.map(({ scope, input, hold }) => ({
      id: hold.id,
      tenant_id: scope.tenantId,
      environment: scope.environment,
      debit_account_id: hold.debitAccountId,
      credit_account_id: hold.creditAccountId,
      currency: hold.currency,
      amount: hold.amount,
      posted_amount: null,
      kind: hold.kind,
      reference: hold.reference,
      metadata: JSON.stringify(input.metadata ?? {}),
      transaction_id: null,
    })),
  );
  await repo.voidHolds(set, [...released]);
  await repo.postHolds(
    set,
    [...posted].map(([id, p]) => ({ id, ...p })),
  );
}

/**
 * The ledger transactions with their entries, each row built once as it is inserted (this runs
 * for every posting of every batch: no intermediate objects copied into the rows).
 */
export async function writePostings(set: WriteSet, pending: Pending[]): Promise<void> {
  if (pending.length === 0) return;
  const transactions: repo.TransactionInsert[] = [];
  const entries: repo.EntryInsert[] = [];
  for (const { scope, input, posting } of pending) {
    transactions.push({
      id: posting.id,
      kind: input.kind,
      reference: input.reference ?? null,
      metadata: JSON.stringify(input.metadata ?? {}),
      tenant_id: scope.tenantId,
      environment: scope.environment,
    });
    for (const e of posting.entries) {
      entries.push({
        id: e.id,
        account_id: e.accountId,
        currency: e.currency,
        amount: e.amount,
        balance_after: e.balanceAfter,
        tenant_id: scope.tenantId,
        environment: scope.environment,
        transaction_id: posting.id,
      });
    }
  }
  await repo.insertTransactionsWithEntries(set, transactions, entries);
}
