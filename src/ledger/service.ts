import type { Queryable } from '../db/client.js';
import type { Writer } from '../db/write-set.js';
import { AppError } from '../core/errors.js';
import { newId } from '../lib/ids.js';
import { LedgerInvariantError, PostingBatch, type PostRefusal, type PostResult } from './batch.js';
import * as repo from './repo.js';
import type { Balance, Hold, HoldInput, LedgerScope, PostedEntry, PostedTransaction, PostingInput, SystemRole } from './types.js';

export { LedgerInvariantError };

export function insufficientFunds(): AppError {
  return new AppError('insufficient_funds');
}

/** Opens a ledger account for a customer/business account or a card. `id` may be the owner's id. */
export async function openAccount(
  db: Queryable,
  scope: LedgerScope,
  input: { id?: string; currency: string; allowNegative?: boolean },
): Promise<string> {
  const id = input.id ?? newId();
  await repo.insertAccount(db, scope, {
    id,
    currency: input.currency,
    kind: 'account',
    systemRole: null,
    allowNegative: input.allowNegative ?? false,
  });
  return id;
}

/** The system account of `role` in `currency`, if it exists (PostingBatch.addFresh creates one with a batch's postings). */
export function findSystemAccount(db: Queryable, scope: LedgerScope, role: SystemRole, currency: string): Promise<string | undefined> {
  return repo.findSystemAccount(db, scope, role, currency);
}

/** The business's system account for a role and currency, created on first use (race-safe). */
export async function systemAccount(db: Queryable, scope: LedgerScope, role: SystemRole, currency: string): Promise<string> {
  const existing = await findSystemAccount(db, scope, role, currency);
  if (existing) return existing;
  const id = newId();
  if (await repo.insertSystemAccountIfAbsent(db, scope, id, role, currency)) return id;
  const winner = await findSystemAccount(db, scope, role, currency);
  if (!winner) throw new LedgerInvariantError('system account vanished');
  return winner;
}

/**
 * Posts a balanced transaction: entries append, balances change, all in the caller's transaction.
 * The same code as a batch of one (batch.ts): lock the balance rows (ascending id), decide in
 * memory, write. A debit that would take a customer account's available balance below zero is
 * a typed refusal naming the account; nothing is written then. The writes go to `writes` when
 * given (a WriteSet the caller sends with its own), else at once, as one statement.
 */
export async function tryPost(trx: Queryable, scope: LedgerScope, input: PostingInput, writes: Writer = trx): Promise<PostResult> {
  const batch = await PostingBatch.open(
    trx,
    input.legs.map((l) => l.accountId),
  );
  const result = batch.tryPost(scope, input);
  if (result.ok) await batch.flush(writes);
  return result;
}

/** tryPost for callers whose only answer to a refusal is 422 insufficient_funds (thrown). */
export async function post(trx: Queryable, scope: LedgerScope, input: PostingInput, writes: Writer = trx): Promise<PostedTransaction> {
  const result = await tryPost(trx, scope, input, writes);
  if (!result.ok) throw insufficientFunds();
  return result.posting;
}

function toHold(row: repo.HoldRow): Hold {
  return {
    id: row.id,
    debitAccountId: row.debit_account_id,
    creditAccountId: row.credit_account_id,
    currency: row.currency,
    amount: row.amount,
    status: row.status,
    postedAmount: row.posted_amount,
    kind: row.kind,
    reference: row.reference,
    metadata: row.metadata,
    transactionId: row.transaction_id,
  };
}

/** Both sides of a hold, in lock order (ascending account id). */
function holdSides(debitId: string, creditId: string) {
  const sides = [
    { id: debitId, side: 'debit' as const },
    { id: creditId, side: 'credit' as const },
  ];
  return sides.sort((a, b) => (a.id < b.id ? -1 : 1));
}

export type HoldResult = { ok: true; hold: Hold } | PostRefusal;

/**
 * Reserves `amount` on the debit account (pending_debits) and announces it on the credit account
 * (pending_credits). Available drops now; posted changes only when the hold is posted. The same
 * code as a batch of one (batch.ts `tryHolds`), like a posting: both balance rows are locked first
 * (ascending id) and the debit is checked under the lock, so a hold that would overdraw is a typed
 * refusal naming the account, with nothing written; the CHECK constraint on balances backs it up.
 */
export async function tryHold(trx: Queryable, scope: LedgerScope, input: HoldInput): Promise<HoldResult> {
  const batch = await PostingBatch.open(trx, [input.debitAccountId, input.creditAccountId]);
  const result = batch.tryHolds(scope, [input]);
  if (!result.ok) return result;
  await batch.flush(trx);
  return { ok: true, hold: result.holds[0]! };
}

/** tryHold for callers whose only answer to a refusal is 422 insufficient_funds (thrown). */
export async function hold(trx: Queryable, scope: LedgerScope, input: HoldInput): Promise<Hold> {
  const result = await tryHold(trx, scope, input);
  if (!result.ok) throw insufficientFunds();
  return result.hold;
}

async function pendingHold(trx: Queryable, scope: LedgerScope, holdId: string): Promise<repo.HoldRow> {
  const row = await repo.findHoldForUpdate(trx, scope, holdId);
  if (!row) throw new LedgerInvariantError(`unknown hold ${holdId}`);
  if (row.status !== 'pending') {
    throw new AppError('invalid_state_transition', `The hold is already ${row.status}`);
  }
  return row;
}

/**
 * Posts a pending hold, fully or partly (`amount` <= the held amount; the rest is released).
 * At most once: a second post or void is 409 invalid_state_transition.
 */
export async function postHold(
  trx: Queryable,
  scope: LedgerScope,
  holdId: string,
  amount?: bigint,
): Promise<{ hold: Hold; transaction: PostedTransaction }> {
  const row = await pendingHold(trx, scope, holdId);
  const postAmount = amount ?? row.amount;
  if (postAmount <= 0n || postAmount > row.amount) throw new LedgerInvariantError('post amount must be in (0, held amount]');
  const transactionId = newId();
  const entries: PostedEntry[] = [];
  for (const { id, side } of holdSides(row.debit_account_id, row.credit_account_id)) {
    const change = side === 'debit' ? { debits: -row.amount, posted: -postAmount } : { credits: -row.amount, posted: postAmount };
    const balanceAfter = await repo.applyPending(trx, scope, id, row.currency, change);
    if (balanceAfter === undefined) throw new LedgerInvariantError(`hold ${holdId} could not be posted`);
    entries.push({ id: newId(), accountId: id, amount: change.posted, currency: row.currency, balanceAfter });
  }
  const createdAt = await repo.insertTransactionWithEntries(
    trx,
    scope,
    {
      id: transactionId,
      kind: row.kind,
      reference: row.reference,
      metadata: { ...row.metadata, hold_id: row.id },
    },
    entries.map((e) => ({ id: e.id, account_id: e.accountId, currency: e.currency, amount: e.amount, balance_after: e.balanceAfter })),
  );
  const finished = await repo.finishHold(trx, row.id, 'posted', postAmount, transactionId);
  if (!finished) throw new LedgerInvariantError('hold changed under its lock');
  return {
    hold: toHold(finished),
    transaction: { id: transactionId, kind: row.kind, reference: row.reference, createdAt, entries },
  };
}

/** Releases a pending hold: nothing posts, available comes back. At most once, like postHold. */
export async function voidHold(trx: Queryable, scope: LedgerScope, holdId: string): Promise<Hold> {
  const row = await pendingHold(trx, scope, holdId);
  for (const { id, side } of holdSides(row.debit_account_id, row.credit_account_id)) {
    const change = side === 'debit' ? { debits: -row.amount } : { credits: -row.amount };
    if ((await repo.applyPending(trx, scope, id, row.currency, change)) === undefined) {
      throw new LedgerInvariantError(`hold ${holdId} could not be voided`);
    }
  }
  const finished = await repo.finishHold(trx, row.id, 'voided', null, null);
  if (!finished) throw new LedgerInvariantError('hold changed under its lock');
  return toHold(finished);
}

/**
 * The pending holds among `ids` in `scope`, locked (ascending id) for a batch that voids them
 * (PostingBatch.releaseHolds, or tryPost releasing them): finished or unknown ones are absent.
 */
export async function lockPendingHolds(trx: Queryable, scope: LedgerScope, ids: string[]): Promise<Map<string, Hold>> {
  const rows = await repo.lockPendingHolds(trx, scope, ids);
  return new Map(rows.map((row) => [row.id, toHold(row)]));
}

export async function getHold(db: Queryable, scope: LedgerScope, holdId: string): Promise<Hold | undefined> {
  const row = await repo.findHold(db, scope, holdId);
  return row ? toHold(row) : undefined;
}

function toBalance(row: repo.BalanceRow): Balance {
  return {
    accountId: row.account_id,
    currency: row.currency,
    posted: row.posted,
    pendingDebits: row.pending_debits,
    pendingCredits: row.pending_credits,
    available: row.posted - row.pending_debits,
  };
}

/** Balances of several ledger accounts (missing ids are absent from the map). */
export async function getBalances(db: Queryable, scope: LedgerScope, accountIds: string[]): Promise<Map<string, Balance>> {
  const rows = await repo.findBalances(db, scope, accountIds);
  return new Map(rows.map((r) => [r.account_id, toBalance(r)]));
}

export async function getBalance(db: Queryable, scope: LedgerScope, accountId: string): Promise<Balance | undefined> {
  return (await getBalances(db, scope, [accountId])).get(accountId);
}

/**
 * Locks the balance rows (ascending id) until the caller's transaction ends and returns them:
 * for decisions that must not race with postings, such as closing an account at zero balance.
 */
export async function lockBalances(trx: Queryable, scope: LedgerScope, accountIds: string[]): Promise<Map<string, Balance>> {
  const rows = await repo.findBalances(trx, scope, [...accountIds].sort(), true);
  return new Map(rows.map((r) => [r.account_id, toBalance(r)]));
}

/** A ledger transaction with its entries (for audit views and tests). */
export async function getTransaction(db: Queryable, scope: LedgerScope, id: string) {
  const tx = await repo.findTransaction(db, scope, id);
  if (!tx) return undefined;
  const entries = await repo.entriesOf(db, [id]);
  return {
    id: tx.id,
    kind: tx.kind,
    reference: tx.reference,
    metadata: tx.metadata,
    createdAt: tx.created_at,
    entries: entries.map((e) => ({
      id: e.id,
      accountId: e.account_id,
      amount: e.amount,
      currency: e.currency,
      balanceAfter: e.balance_after,
    })),
  };
}
