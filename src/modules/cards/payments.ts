import type { Queryable, Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import type { AuthorizationRequest, CardNetwork } from '../../rails/cards.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';
import type { AuthorizationResponse, DeclineReason, ListAuthorizationsQuery, SimulateAuthorizationBody } from './schema.js';
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
    throw new AppError('unprocessable', undefined, [
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
      throw new AppError('unprocessable', undefined, [
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
