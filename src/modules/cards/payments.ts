import type { Queryable, Trx } from '../../db/client.js';
import { groupByScope, scopeKey, soleScope, type Scope } from '../../core/context.js';
import type { WriteSet } from '../../db/write-set.js';
import type { LockPlan } from '../../db/pipeline.js';
import { AppError, notFound, refusalOf, validationError, type ItemOutcome } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import type { AuthorizationRequest, CardNetwork } from '../../rails/cards.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvent, recordEvents } from '../webhooks/service.js';
import * as repo from './repo.js';
import type {
  AuthorizationResponse,
  DeclineReason,
  ListAuthorizationsQuery,
  SimulateAuthorizationBody,
  WithdrawBody,
  WithdrawResponse,
} from './schema.js';
import { TERMINAL_STATUSES } from './schema.js';
import { isExpired } from './secrets.js';
import { cardTransactionEvent, requireCard } from './service.js';
import { REAL_TIME, type Timeline } from '../../core/clock.js';

export function toAuthorizationResponse(a: repo.AuthorizationRow): AuthorizationResponse {
  return {
    id: a.id,
    card_id: a.card_id,
    status: a.status as AuthorizationResponse['status'],
    amount: formatAmount(a.amount, a.currency),
    captured_amount: a.captured_amount === null ? null : formatAmount(a.captured_amount, a.currency),
    currency: a.currency,
    merchant_name: a.merchant_name,
    merchant_category: a.merchant_category,
    decline_reason: a.decline_reason,
    expires_at: a.expires_at?.toISOString() ?? null,
    date_created: a.created_at.toISOString(),
    date_updated: a.updated_at.toISOString(),
  };
}

// ---------- authorizations ----------

const startOfUtcDay = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
const startOfUtcMonth = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));

/** Spending controls: categories first, then per-transaction, daily and monthly limits. */
async function controlsDecline(trx: Queryable, ctx: Scope, card: repo.CardRow, req: AuthorizationRequest): Promise<DeclineReason | null> {
  if (!card.controls_activated) return null;
  const category = req.merchantCategory;
  if (category !== null && card.blocked_categories.includes(category)) return 'merchant_category_blocked';
  if (card.allowed_categories.length > 0 && (category === null || !card.allowed_categories.includes(category))) {
    return 'merchant_category_blocked';
  }
  if (card.single_transaction_limit !== null && req.amount > card.single_transaction_limit) return 'limit_exceeded';
  const now = new Date();
  if (card.daily_limit !== null && (await repo.spentSince(trx, ctx, card.id, startOfUtcDay(now))) + req.amount > card.daily_limit) {
    return 'limit_exceeded';
  }
  if (card.monthly_limit !== null && (await repo.spentSince(trx, ctx, card.id, startOfUtcMonth(now))) + req.amount > card.monthly_limit) {
    return 'limit_exceeded';
  }
  return null;
}

/**
 * The issuer's decision. The card row is locked by the caller, so the limit sums and the balance
 * read cannot race another authorization or a withdrawal of the same card.
 */
async function decide(trx: Queryable, ctx: Scope, card: repo.CardRow, req: AuthorizationRequest): Promise<DeclineReason | null> {
  if (req.networkDecline) return req.networkDecline;
  if ((TERMINAL_STATUSES as readonly string[]).includes(card.status)) return 'card_blocked';
  if (card.status === 'freeze') return 'card_frozen';
  if (card.status === 'inactive') return 'card_inactive';
  if (isExpired(card.expiry_month, card.expiry_year)) return 'card_expired';
  const control = await controlsDecline(trx, ctx, card, req);
  if (control) return control;
  const balance = await ledger.getBalance(trx, ctx, card.id);
  if (!balance || balance.available < req.amount) return 'insufficient_funds';
  return null;
}

/** A declined authorization still shows on the card's transactions, as failed, with its reason. */
async function recordDecline(trx: Trx, ctx: Scope, card: repo.CardRow, auth: repo.AuthorizationRow) {
  const [row] = await transactions.recordMovement(trx, ctx, {
    reference: auth.id,
    sides: [
      {
        accountId: card.id,
        customerId: card.customer_id,
        direction: 'out',
        amount: auth.amount,
        currency: card.currency,
        channel: 'card_payment',
        transactionType: 'card_payment',
        status: 'failed',
        description: auth.merchant_name,
        cardId: card.id,
        metadata: paymentMetadata(card, auth),
      },
    ],
  });
  const data = { ...cardTransactionEvent(row!, card), authorization: toAuthorizationResponse(auth) };
  await recordEvent(trx, ctx, 'cards.transaction.declined', data, card.id);
}

function paymentMetadata(card: repo.CardRow, auth: repo.AuthorizationRow) {
  return {
    authorization_id: auth.id,
    card_id: card.id,
    card_type: card.card_type,
    merchant_name: auth.merchant_name,
    merchant_category: auth.merchant_category,
    declined_reason: auth.decline_reason,
    authorize_time: auth.created_at.toISOString(),
  };
}

/** A network authorization: approved (funds held on the card) or declined with a reason. */
export async function authorize(
  trx: Trx,
  network: CardNetwork,
  expiryHours: number,
  ctx: Scope,
  cardId: string,
  body: SimulateAuthorizationBody,
): Promise<AuthorizationResponse> {
  const card = await requireCard(trx, ctx, cardId, 'update');
  const amount = parseAmount(body.amount, card.currency);
  const req = network.authorization({
    cardId,
    amount,
    merchantName: body.merchant_name,
    merchantCategory: body.merchant_category,
    declineReason: body.decline_reason,
  });
  const reason = await decide(trx, ctx, card, req);
  const id = newId();
  const now = new Date();
  let holdId: string | null = null;
  if (reason === null) {
    const settlement = await ledger.systemAccount(trx, ctx, 'card_settlement', card.currency);
    const hold = await ledger.hold(trx, ctx, {
      debitAccountId: card.id,
      creditAccountId: settlement,
      amount,
      currency: card.currency,
      kind: 'card_payment',
      reference: id,
      metadata: { card_id: card.id, authorization_id: id, merchant_name: req.merchantName },
    });
    holdId = hold.id;
  }
  await repo.insertAuthorization(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    card_id: card.id,
    currency: card.currency,
    amount,
    merchant_name: req.merchantName,
    merchant_category: req.merchantCategory,
    status: reason === null ? 'approved' : 'declined',
    decline_reason: reason,
    hold_id: holdId,
    expires_at: reason === null ? new Date(now.getTime() + expiryHours * 3_600_000) : null,
  });
  const auth = (await repo.findAuthorization(trx, ctx, id))!;
  if (reason === null) await recordEvent(trx, ctx, 'cards.transaction.payment', toAuthorizationResponse(auth), card.id);
  else await recordDecline(trx, ctx, card, auth);
  return toAuthorizationResponse(auth);
}

async function requireApproved(trx: Trx, ctx: Scope, id: string): Promise<repo.AuthorizationRow> {
  const auth = await repo.findAuthorization(trx, ctx, id, 'update');
  if (!auth) throw notFound('Card authorization');
  if (auth.status !== 'approved' || auth.hold_id === null) {
    throw new AppError(
      'invalid_state_transition',
      `The authorization is ${auth.status}; it can be captured or reversed only while approved`,
    );
  }
  return auth;
}

/** Clearing: posts all or part of the hold (the rest is released), at most once. */
export async function capture(trx: Trx, network: CardNetwork, ctx: Scope, authorizationId: string, rawAmount: unknown) {
  const auth = await requireApproved(trx, ctx, authorizationId);
  const amount = rawAmount === undefined ? auth.amount : parseAmount(rawAmount, auth.currency);
  const req = network.settlement(auth.id, amount);
  const captured = req.amount ?? auth.amount;
  if (captured > auth.amount) {
    throw new AppError('unprocessable', 'A capture cannot exceed the authorized amount', [
      { field: 'amount', code: 'exceeds_authorization', message: `At most ${formatAmount(auth.amount, auth.currency)}` },
    ]);
  }
  const { transaction: posting } = await ledger.postHold(trx, ctx, auth.hold_id!, captured);
  await repo.settleAuthorization(trx, auth.id, { status: 'captured', captured_amount: captured });
  const settled = (await repo.findAuthorization(trx, ctx, auth.id))!;
  const card = await requireCard(trx, ctx, auth.card_id);
  await transactions.recordMovement(trx, ctx, {
    reference: auth.id,
    posting,
    sides: [
      {
        accountId: card.id,
        customerId: card.customer_id,
        direction: 'out',
        amount: captured,
        currency: card.currency,
        channel: 'card_payment',
        transactionType: 'card_payment',
        description: auth.merchant_name,
        cardId: card.id,
        metadata: paymentMetadata(card, settled),
      },
    ],
  });
  const response = toAuthorizationResponse(settled);
  await recordEvent(trx, ctx, 'cards.transaction.payment', response, card.id);
  return response;
}

/** Reversal: the whole hold is released, nothing posts, at most once. */
export async function reverse(trx: Trx, network: CardNetwork, ctx: Scope, authorizationId: string, rawAmount: unknown) {
  const auth = await requireApproved(trx, ctx, authorizationId);
  if (rawAmount !== undefined) {
    const amount = network.settlement(auth.id, parseAmount(rawAmount, auth.currency)).amount;
    if (amount !== auth.amount) {
      throw new AppError('unprocessable', 'Only a full reversal is supported: capture the part that was spent instead', [
        { field: 'amount', code: 'partial_reversal', message: `Send ${formatAmount(auth.amount, auth.currency)} or no amount` },
      ]);
    }
  }
  return release(trx, ctx, auth, 'reversed');
}

async function release(trx: Trx, ctx: Scope, auth: repo.AuthorizationRow, status: 'reversed' | 'expired') {
  await ledger.voidHold(trx, ctx, auth.hold_id!);
  await repo.settleAuthorization(trx, auth.id, { status });
  const response = toAuthorizationResponse((await repo.findAuthorization(trx, ctx, auth.id))!);
  await recordEvent(trx, ctx, 'cards.transaction.payment', response, auth.card_id);
  return response;
}

/**
 * Worker: approved authorizations never captured are released after CARD_AUTH_EXPIRY_HOURS. Claims
 * a bounded batch with SKIP LOCKED (PostgreSQL) so several workers share the work, in the tick's
 * transaction; true = more.
 */
export async function expireDue(trx: Trx, batch: number, skipLocked: boolean, t: Timeline = REAL_TIME): Promise<boolean> {
  const due = await repo.claimExpiredAuthorizations(trx, batch, skipLocked, t);
  for (const auth of due) {
    await release(trx, { tenantId: auth.tenant_id, environment: auth.environment as Scope['environment'] }, auth, 'expired');
  }
  return due.length === batch;
}

export async function getAuthorization(db: Queryable, ctx: Scope, id: string): Promise<AuthorizationResponse> {
  const row = await repo.findAuthorization(db, ctx, id);
  if (!row) throw notFound('Card authorization');
  return toAuthorizationResponse(row);
}

export async function listAuthorizations(
  db: Queryable,
  ctx: Scope,
  cardId: string,
  query: ListAuthorizationsQuery,
): Promise<Page<AuthorizationResponse>> {
  await requireCard(db, ctx, cardId);
  const page = await repo.listAuthorizations(db, ctx, cardId, query);
  return { ...page, items: page.items.map(toAuthorizationResponse) };
}

// ---------- withdrawal ----------

export interface WithdrawRequest {
  ctx: Scope;
  body: WithdrawBody;
}

/** A withdrawal its checks let through, before its posting is tried. */
interface Checked {
  i: number;
  ctx: Scope;
  card: repo.CardRow;
  account: accounts.AccountRow;
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
  locked: Map<string, Map<string, accounts.AccountRow>>;
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
    statements: [repo.findCardsQuery(trx, ctx, cardIds).compile(), accountLock.statement, balances.statement],
    read: ([cards, accountRows, balanceRows]) => ({
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
function checkWithdrawal(card: repo.CardRow, account: accounts.AccountRow | undefined): accounts.AccountRow {
  if (!account)
    throw new AppError('not_found', 'Account not found', [{ field: 'account_id', code: 'not_found', message: 'No such account' }]);
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
  const cards = first?.cards ?? new Map<string, repo.CardRow>();
  if (!first) {
    for (const { key, ctx, values } of groupByScope(reqs.map((r) => ({ ctx: r.ctx, values: [r.body.card_id] })))) {
      for (const card of await repo.findCards(trx, ctx, values)) cards.set(`${key}:${card.id}`, card);
    }
  }
  const outcomes: (WithdrawResponse | AppError | undefined)[] = reqs.map(() => undefined);
  const named: { i: number; ctx: Scope; card: repo.CardRow; amount: bigint; accountId: string }[] = [];
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
  const book = await ledger.PostingBatch.open(
    trx,
    checked.flatMap((c) => [c.card.id, c.account.id]),
    first?.balances,
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
      outcomes[c.i] = new AppError('insufficient_funds', 'The card has insufficient available balance', [
        { field: 'amount', code: 'insufficient_funds', message: 'Exceeds the card available balance' },
      ]);
  }
  await book.flush(writes);
  const answers = await recordWithdrawals(writes, accepted);
  accepted.forEach((a, k) => (outcomes[a.i] = answers[k]));
  return outcomes.map((o) => (o instanceof AppError ? { ok: false, error: o } : { ok: true, data: o! }));
}
