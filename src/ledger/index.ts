/**
 * The ledger: the ONLY code that writes ledger entries and balances. Every money movement in the
 * product is a call to this API inside the caller's database transaction (the `trx` the service
 * got from `deps.idempotency.run`), so the movement, the business object, its outbox event and
 * the idempotency record commit together or not at all.
 *
 * Model (double entry, amounts are signed bigint minor units, credit positive):
 * - Ledger account: one per customer/business account and per card (use the owner's id as the
 *   ledger account id), plus system accounts per tenant + environment + currency:
 *   settlement, fx_position, fee_income, card_settlement, suspense. Customer accounts can never
 *   go below zero available; system accounts may.
 * - Balance per ledger account: posted (= sum of its entries), pending_debits, pending_credits;
 *   available = posted - pending_debits.
 *
 * API (scope = {tenantId, environment}, usually `req.ctx`):
 * - openAccount(trx, scope, {id?, currency, allowNegative?}) -> id. New ledger account at zero.
 * - systemAccount(trx, scope, role, currency) -> id. Get-or-create a system account (race-safe).
 * - tryPost(trx, scope, {kind, reference?, metadata?, legs: [{accountId, amount, currency}]})
 *     -> {ok: true, posting} | {ok: false, reason: 'insufficient_funds', accountId}: nothing written on a refusal.
 * - post(trx, scope, {kind, reference?, metadata?, legs: [{accountId, amount, currency}]})
 *     -> {id, createdAt, entries: [{id, accountId, amount, currency, balanceAfter}]}.
 *   Legs must sum to zero per currency (else LedgerInvariantError = bug, 500). A debit that would
 *   make a customer account's available balance negative throws AppError 422 insufficient_funds;
 *   the caller's transaction then rolls back, so nothing moves. balance_before = balanceAfter - amount.
 * - hold(trx, scope, {debitAccountId, creditAccountId, amount, currency, kind, reference?, metadata?})
 *     -> Hold (pending). Reserves funds on the debit account (422 insufficient_funds if not available).
 * - postHold(trx, scope, holdId, amount?) -> {hold, transaction}. Posts all or part (cards) of a
 *   pending hold and releases the rest. voidHold(trx, scope, holdId) -> Hold releases it.
 *   Each hold finishes at most once: a second post/void is 409 invalid_state_transition.
 *   lockPendingHolds(trx, scope, ids) -> Map of the pending ones, locked, for a batch that voids them.
 * - getBalance / getBalances(db, scope, ids) -> Balance(s); lockBalances(trx, scope, ids) locks
 *   rows (ascending id) for decisions that must not race postings (closing at zero balance).
 * - postedBefore / heldAt / totalsBetween / entriesPage / balancesBefore (history.ts): an account's
 *   past, read from the entries' balance_after by index (balances as of an instant, statements,
 *   daily closing balances).
 * - getHold, getTransaction(db, scope, id) for reads; reconcile(db, tenantId?) proves zero-sum
 *   per transaction, posted = sum(entries) and pending = open holds (CLI: `ledger reconcile`).
 *
 * - PostingBatch.open(trx, accountIds, ahead?) locks and reads the balance rows of a batch in one
 *   statement, or takes them from `ahead` (balanceLockAhead: sent with the statements before it);
 *   batch.tryPost(scope, input) -> {ok: true, posting} | {ok: false, reason: 'insufficient_funds',
 *   accountId} decides in memory (a refusal is a value, not an exception, and changes nothing);
 *   batch.tryHolds(scope, holds) reserves several holds together (a payout's principal and fee), all
 *   or none; batch.releaseHolds(scope, holds) voids locked pending holds, and tryPost(scope, input,
 *   holds) voids them and posts together or does neither (a limit order executing: its hold is
 *   released and the conversion booked); batch.flush(writer) writes every accepted posting, hold
 *   and release as one statement
 *   (docs/money-path.md).
 *
 * Concurrency: a posting (or batch) first locks its balance rows in ascending account id (an
 * advisory lock for each, then the rows read: two statements, one round trip; repo.ts
 * balanceLock), decides under those locks and writes: no unlocked read-modify-write, and no
 * deadlock between postings; holds are a batch of one too (tryHold: a typed refusal); a CHECK
 * constraint backs the rule up.
 */
export {
  openAccount,
  systemAccount,
  post,
  hold,
  tryHold,
  postHold,
  voidHold,
  lockPendingHolds,
  getHold,
  getBalance,
  getBalances,
  lockBalances,
  getTransaction,
  insufficientFunds,
  findSystemAccount,
  LedgerInvariantError,
} from './service.js';
export { PostingBatch, balanceLockAhead, systemBalancesAhead, type LockedAhead, type PostRefusal } from './batch.js';
export { reconcile } from './reconcile.js';
export { postedBefore, heldAt, totalsBetween, entriesPage, balancesBefore, type HistoryEntry } from './history.js';
export type { Balance, Hold, HoldInput, LedgerScope, Leg, PostedTransaction, PostingInput } from './types.js';
