import type { Trx } from '../../db/client.js';
import { groupByScope, scopeKey, soleScope, type Scope } from '../../core/context.js';
import type { WriteSet } from '../../db/write-set.js';
import type { LockPlan } from '../../db/pipeline.js';
import { AppError, notFound, refusalOf, validationError, type ItemOutcome } from '../../core/errors.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import * as repo from './repo.js';
import type { WithdrawBody, WithdrawResponse } from './schema.js';
import { cardTransactionEvent } from './service.js';

/** Withdrawals: money from cards' balances to accounts, a batch of them in one transaction. */

export interface WithdrawRequest {
  ctx: Scope;
  body: WithdrawBody;
}

/**
 * The rows a withdrawal's batch locks that its request names, for the batcher (db/batcher.ts
 * `touches`): the balance rows of its card and of its account. Without an account the one it
 * goes to is read later: a hint, and the database's locks still decide.
 */
export const rowsNamed = ({ body }: WithdrawRequest): string[] => (body.account_id ? [body.card_id, body.account_id] : [body.card_id]);

/** A withdrawal its checks let through, before its posting is tried. */
interface Checked {
  i: number;
  ctx: Scope;
  card: repo.CardRow;
  account: accounts.MovementAccountRow;
  amount: bigint;
}

type Accepted = Checked & { id: string; posting: ledger.PostedTransaction };

/** The account transactions (card side first) and events of accepted withdrawals, into `writes`; their answers. */
async function recordWithdrawals(writes: WriteSet, accepted: Accepted[]): Promise<WithdrawResponse[]> {
  const rows = await transactions.recordMovements(
    writes,
    accepted.map(({ ctx, card, account, amount, id, posting }) => {
      const common = {
        currency: card.currency,
        amount,
        channel: 'card_withdrawal' as const,
        transactionType: 'card_withdrawal' as const,
        cardId: card.id,
        sendingAccountId: card.id,
        receivingAccountId: account.id,
        metadata: { card_id: card.id, card_type: card.card_type },
        description: 'Card withdrawal',
      };
      return {
        ctx,
        movement: {
          reference: id,
          posting,
          sides: [
            { ...common, accountId: card.id, customerId: card.customer_id, direction: 'out' as const },
            { ...common, accountId: account.id, customerId: account.customer_id, direction: 'in' as const },
          ],
        },
      };
    }),
  );
  await recordEvents(
    writes,
    accepted.map((a, k) => ({
      ctx: a.ctx,
      eventType: 'cards.transaction.withdraw' as const,
      data: cardTransactionEvent(rows[k]![0]!, a.card),
      groupId: a.card.id,
    })),
  );
  return accepted.map((a, k) => ({
    id: a.id,
    card_id: a.card.id,
    account_id: a.account.id,
    amount: formatAmount(a.amount, a.card.currency),
    currency: a.card.currency,
    status: 'completed' as const,
    transaction_id: rows[k]![0]!.id,
    date_created: a.posting.createdAt.toISOString(),
  }));
}

/** What planWithdrawalReads read with the claim: the cards and accounts by `scope:id`, the balance rows locked. */
export interface WithdrawFirstReads {
  cards: Map<string, repo.CardRow>;
  locked: Map<string, Map<string, accounts.MovementAccountRow>>;
  balances: ledger.LockedAhead;
}

/**
 * A batch's first reads, when the requests name everything they touch (one business, every
 * withdrawal naming its account): the cards, the accounts share-locked, and the balance rows of
 * both locked, as statements the caller sends right behind the idempotency claim
 * (http/idempotency-batch.ts), in withdrawCards' lock order. Otherwise undefined: withdrawCards
 * reads them itself after the claim. Rows of a withdrawal refused later are locked for nothing
 * until the commit, which is harmless.
 */
export function planWithdrawalReads(trx: Trx, reqs: WithdrawRequest[]): LockPlan<WithdrawFirstReads> | undefined {
  const ctx = soleScope(reqs);
  if (!ctx || reqs.some((r) => r.body.account_id === undefined)) return undefined;
  const key = scopeKey(ctx);
  const cardIds = reqs.map((r) => r.body.card_id);
  const accountIds = reqs.map((r) => r.body.account_id!);
  const accountLock = accounts.lockForMovementStatement(trx, ctx, accountIds);
  const balances = ledger.balanceLockAhead(trx, ctx, [...cardIds, ...accountIds]);
  return {
    statements: [repo.findCardsQuery(trx, ctx, cardIds).compile(), accountLock.statement, ...balances.statements],
    read: ([cards, accountRows, , balanceRows]) => ({
      cards: new Map((cards as repo.CardRow[]).map((card) => [`${key}:${card.id}`, card])),
      locked: new Map([[key, accountLock.read(accountRows!)]]),
      balances: { ids: balances.ids, rows: balanceRows as ledger.LockedAhead['rows'] },
    }),
  };
}

/** The account a withdrawal pays into: the one named, or the owner's oldest active one in the currency. */
async function withdrawalAccount(trx: Trx, ctx: Scope, card: repo.CardRow, accountId: string | undefined): Promise<string> {
  if (accountId) return accountId;
  const oldest = await accounts.oldestActiveAccount(trx, ctx, card.customer_id, card.currency);
  if (!oldest) {
    throw validationError([
      { field: 'account_id', code: 'required', message: `The card owner has no active ${card.currency} account; name one` },
    ]);
  }
  return oldest;
}

/** The checks that need no balance: the account must be the card owner's (or the business's), in the card's currency. */
function checkWithdrawal(card: repo.CardRow, account: accounts.MovementAccountRow | undefined): accounts.MovementAccountRow {
  if (!account) throw notFound('Account', [{ field: 'account_id', code: 'not_found', message: 'No such account' }]);
  if (account.customer_id !== null && account.customer_id !== card.customer_id) {
    throw validationError([{ field: 'account_id', code: 'mismatch', message: "The account must be the card owner's or the business's" }]);
  }
  if (account.currency !== card.currency) {
    throw new AppError('currency_mismatch', `The card holds ${card.currency}, the account ${account.currency}`, [
      { field: 'account_id', code: 'currency_mismatch', message: `Use a ${card.currency} account` },
    ]);
  }
  accounts.assertCanCredit(account, 'account_id');
  return account;
}

/**
 * Moves money from cards' balances to accounts of their owners (or of the business), for a batch
 * of withdrawals in one transaction (the batch path, docs/money-path.md): the cards (one read per
 * business), the accounts share-locked, then every balance row in id order, as a transfer locks
 * them; each withdrawal is decided in memory in arrival order against the locked balances (the
 * card's available balance, net of held authorizations, never goes below zero), and the postings,
 * account transactions and events of the batch go into `writes`. Each withdrawal gets its own
 * outcome: one refused never fails the others. Allowed in every card status: a blocked card must
 * still be emptied. A withdrawal that names no account adds one read, for its default account.
 */
export async function withdrawCards(
  trx: Trx,
  reqs: WithdrawRequest[],
  writes: WriteSet,
  first?: WithdrawFirstReads,
): Promise<ItemOutcome<WithdrawResponse>[]> {
  const outcomes: (WithdrawResponse | AppError | undefined)[] = reqs.map(() => undefined);
  const cards = first?.cards ?? (await loadCards(trx, reqs));
  const named = await nameAccounts(trx, reqs, cards, outcomes);
  const locked =
    first?.locked ??
    (await accounts.lockForMovements(
      trx,
      named.map((n) => ({ ctx: n.ctx, ids: [n.accountId] })),
    ));
  const checked: Checked[] = [];
  for (const n of named) {
    const account = await refusalOf(() => checkWithdrawal(n.card, locked.get(scopeKey(n.ctx))?.get(n.accountId)));
    if (account instanceof AppError) outcomes[n.i] = account;
    else checked.push({ ...n, account });
  }
  const accepted = await postWithdrawals(trx, checked, writes, first?.balances, outcomes);
  const answers = await recordWithdrawals(writes, accepted);
  accepted.forEach((a, k) => (outcomes[a.i] = answers[k]));
  return outcomes.map((o) => (o instanceof AppError ? { ok: false, error: o } : { ok: true, data: o! }));
}

/** The cards the withdrawals name: one read per business. */
async function loadCards(trx: Trx, reqs: WithdrawRequest[]): Promise<Map<string, repo.CardRow>> {
  const cards = new Map<string, repo.CardRow>();
  for (const { key, ctx, values } of groupByScope(reqs.map((r) => ({ ctx: r.ctx, values: [r.body.card_id] })))) {
    for (const card of await repo.findCards(trx, ctx, values)) cards.set(`${key}:${card.id}`, card);
  }
  return cards;
}

type Named = { i: number; ctx: Scope; card: repo.CardRow; amount: bigint; accountId: string };

/** Each withdrawal's card, amount and account to pay; a refusal goes into its outcome. */
async function nameAccounts(
  trx: Trx,
  reqs: WithdrawRequest[],
  cards: Map<string, repo.CardRow>,
  outcomes: (WithdrawResponse | AppError | undefined)[],
): Promise<Named[]> {
  const named: Named[] = [];
  for (const [i, { ctx, body }] of reqs.entries()) {
    const found = await refusalOf(async () => {
      const card = cards.get(`${scopeKey(ctx)}:${body.card_id}`);
      if (!card) throw notFound('Card');
      const amount = parseAmount(body.amount, card.currency);
      return { i, ctx, card, amount, accountId: await withdrawalAccount(trx, ctx, card, body.account_id) };
    });
    if (found instanceof AppError) outcomes[i] = found;
    else named.push(found);
  }
  return named;
}

/** Each checked withdrawal posted in arrival order against the locked balances; one short of funds is refused alone. */
async function postWithdrawals(
  trx: Trx,
  checked: Checked[],
  writes: WriteSet,
  balances: WithdrawFirstReads['balances'] | undefined,
  outcomes: (WithdrawResponse | AppError | undefined)[],
): Promise<Accepted[]> {
  const book = await ledger.PostingBatch.open(
    trx,
    checked.flatMap((c) => [c.card.id, c.account.id]),
    balances,
  );
  const accepted: Accepted[] = [];
  for (const c of checked) {
    const id = newId();
    const result = book.tryPost(c.ctx, {
      kind: 'card_withdrawal',
      reference: id,
      metadata: { card_id: c.card.id },
      legs: [
        { accountId: c.card.id, amount: -c.amount, currency: c.card.currency },
        { accountId: c.account.id, amount: c.amount, currency: c.card.currency },
      ],
    });
    if (result.ok) accepted.push({ ...c, id, posting: result.posting });
    else
      outcomes[c.i] = new AppError('insufficient_funds', undefined, [
        { field: 'amount', code: 'insufficient_funds', message: 'Exceeds the card available balance' },
      ]);
  }
  await book.flush(writes);
  return accepted;
}
