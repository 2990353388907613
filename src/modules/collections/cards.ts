import type { Queryable, Trx } from '../../db/client.js';
import type { Environment, RequestContext } from '../../core/context.js';
import { AppError, notFound, validationError, type ErrorDetail } from '../../core/errors.js';
import type { Page } from '../../db/pagination.js';
import { cardBrand, expiringSoon, isCvv, luhnValid, parseExpiry } from '../../lib/cards.js';
import { randomBase62, type Sealer } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import { cardAcquirer } from '../../rails/card-acquiring.js';
import { requireCustomer } from '../customers/service.js';
import { completeCollection, failCollection } from './lifecycle.js';
import * as repo from './repo.js';
import type { ChargeCardBody, CheckoutPayBody, CreatePaymentIntentBody, ListSavedCardsQuery, SavedCardResponse } from './schema.js';
import { destinationAccount, insertPending, paymentLink, sessionMatches, type CollectionDeps } from './service.js';

/**
 * Card collections: card numbers arrive only on the hosted checkout page (or, in sandbox, the
 * card-token simulation), are sealed with the data key at once, and never logged or returned.
 * The CVV is checked for shape, passed to the acquirer, and dropped.
 */
type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;
const sealContext = (id: string) => `saved-card:${id}`;

export interface CardInput {
  card_number: string;
  expiry: string;
  cvv: string;
}

/** Every problem with typed card details at once (messages never repeat the number). */
function checkCard(input: CardInput): { pan: string; exp: { month: string; year: string } } {
  const pan = input.card_number.replace(/[\s-]/g, '');
  const exp = parseExpiry(input.expiry);
  const details: ErrorDetail[] = [];
  if (!luhnValid(pan)) details.push({ field: 'card_number', code: 'invalid', message: 'Not a valid card number' });
  if (!exp) details.push({ field: 'expiry', code: 'invalid', message: 'Use MM/YY, not in the past' });
  if (!isCvv(input.cvv)) details.push({ field: 'cvv', code: 'invalid', message: 'Must be 3 or 4 digits' });
  if (details.length > 0 || !exp) throw validationError(details, 'Invalid card details');
  return { pan, exp };
}

export function toSavedCard(row: repo.SavedCardRow): SavedCardResponse {
  return {
    id: row.id,
    card_token: row.card_token,
    customer_id: row.customer_id,
    card_last4: row.card_last4,
    card_brand: row.card_brand,
    card_exp_month: row.card_exp_month,
    card_exp_year: row.card_exp_year,
    is_default: row.is_default,
    is_expiring_soon: expiringSoon(row.card_exp_month, row.card_exp_year),
    billing_info: row.billing_info,
    created_at: row.created_at.toISOString(),
  };
}

/** Seals a checked card and stores it as a saved card with a token (first card of a customer is default). */
async function saveCard(
  trx: Queryable,
  ctx: Scope,
  sealer: Sealer,
  card: { pan: string; exp: { month: string; year: string } },
  owner: { customerId: string | null; clientCustomerId: string | null },
) {
  const id = newId();
  const row = {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: owner.customerId,
    client_customer_id: owner.clientCustomerId,
    card_token: `tokn_${randomBase62(32)}`,
    card_sealed: sealer.seal(card.pan, sealContext(id)),
    card_last4: card.pan.slice(-4),
    card_brand: cardBrand(card.pan),
    card_exp_month: card.exp.month,
    card_exp_year: card.exp.year,
    is_default: owner.customerId !== null && !(await repo.hasSavedCards(trx, ctx, owner.customerId)),
    billing_info: null,
  };
  await repo.insertSavedCard(trx, row);
  return (await repo.findSavedCard(trx, ctx, id))!;
}

/** Sandbox: `POST /v1/simulations/card-tokens` turns card details into a card_token. */
export async function simulateCardToken(
  trx: Trx,
  ctx: Scope,
  sealer: Sealer,
  body: CardInput & { customer_id?: string | undefined; client_customer_id?: string | undefined },
) {
  if (ctx.environment !== 'sandbox') throw notFound('Route');
  const card = checkCard(body);
  if (body.customer_id) await requireCustomer(trx, ctx, body.customer_id);
  return toSavedCard(
    await saveCard(trx, ctx, sealer, card, { customerId: body.customer_id ?? null, clientCustomerId: body.client_customer_id ?? null }),
  );
}

/** Charges a card for a pending card collection: completes it, or fails it with the decline. */
async function chargeCollection(trx: Trx, ctx: Scope, d: CollectionDeps, row: repo.CollectionRow, pan: string, savedCardId: string | null) {
  const result = await cardAcquirer(ctx.environment as Environment).charge({ pan, amount: row.amount, currency: row.currency });
  if (!result.approved) {
    await failCollection(trx, ctx, d, row.id, result.code, result.message);
    return { status: 'failed' as const, transactionId: null, failureCode: result.code, failureMessage: result.message };
  }
  const done = await completeCollection(trx, ctx, d, row.id, { detailedStatus: 'completed', savedCardId });
  return { status: 'succeeded' as const, transactionId: done.account_transaction_id, failureCode: null, failureMessage: null };
}

async function chargeToken(trx: Trx, ctx: Scope, d: CollectionDeps, row: repo.CollectionRow, token: string) {
  const card = await repo.findSavedCardByToken(trx, ctx, token);
  if (!card || (card.customer_id !== null && card.customer_id !== row.customer_id)) {
    throw new AppError('not_found', 'Card token not found', [
      { field: 'card_token', code: 'not_found', message: 'No saved card with this token for this customer' },
    ]);
  }
  if (!parseExpiry(`${card.card_exp_month}/${card.card_exp_year}`)) {
    return failCollection(trx, ctx, d, row.id, 'expired_card', 'The saved card has expired').then(() => ({
      status: 'failed' as const,
      transactionId: null,
      failureCode: 'expired_card',
      failureMessage: 'The saved card has expired',
    }));
  }
  return chargeCollection(trx, ctx, d, row, d.sealer.open(card.card_sealed, sealContext(card.id)), card.id);
}

function intentResponse(d: CollectionDeps, row: repo.CollectionRow, charge?: Awaited<ReturnType<typeof chargeCollection>>) {
  return {
    intent_id: row.id,
    status: charge?.status ?? ('created' as const),
    collection_status: charge ? (charge.status === 'succeeded' ? ('completed' as const) : ('failed' as const)) : row.status,
    client_reference: row.client_reference,
    amount: formatAmount(row.amount, row.currency),
    currency: row.currency,
    requires_action: false,
    payment_link: charge ? null : paymentLink(d, row),
    transaction_id: charge?.transactionId ?? null,
    failure_code: charge?.failureCode ?? null,
    failure_message: charge?.failureMessage ?? null,
    metadata: row.metadata,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
  };
}

/** POST /v1/collections/cards/payment-intents: a card collection; with `card_token` it is charged at once. */
export async function createPaymentIntent(trx: Trx, ctx: Scope, d: CollectionDeps, body: CreatePaymentIntentBody) {
  await requireCustomer(trx, ctx, body.customer_id);
  const amount = parseAmount(body.amount, body.currency);
  const account = await destinationAccount(trx, ctx, body.destination, body.currency);
  const row = await insertPending(trx, ctx, d, {
    kind: 'payment_intent',
    method: 'card',
    methods: ['card'],
    amount,
    currency: body.currency,
    country: body.country ?? 'US',
    customerId: body.customer_id,
    clientCustomerId: body.client_customer_id,
    clientReference: body.client_reference,
    accountId: account.id,
    metadata: body.metadata,
  });
  if (!body.card_token) return intentResponse(d, row);
  return intentResponse(d, row, await chargeToken(trx, ctx, d, row, body.card_token));
}

/** POST /v1/collections/cards/payment-intents/charge */
export async function chargeCard(trx: Trx, ctx: Scope, d: CollectionDeps, body: ChargeCardBody) {
  const row = await repo.findCollection(trx, ctx, body.payment_intent_id, 'update');
  if (!row || row.method !== 'card') throw notFound('Payment intent');
  if (row.status !== 'pending') throw new AppError('invalid_state_transition', `The payment intent is already ${row.status}`);
  const result = await chargeToken(trx, ctx, d, row, body.card_token);
  return {
    payment_intent_id: row.id,
    transaction_id: result.transactionId,
    status: result.status,
    requires_action: false,
    failure_code: result.failureCode,
    failure_message: result.failureMessage,
  };
}

/**
 * The hosted checkout page's submit: the session token from the payment link authorizes it
 * (no API key: the payer is not the business). Optionally saves the card for later charges.
 */
export async function payAtCheckout(trx: Trx, d: CollectionDeps, collectionId: string, body: CheckoutPayBody) {
  const row = await repo.findCollectionById(trx, collectionId, 'update');
  if (!row || row.method !== 'card' || !sessionMatches(d.sealer, row, body.session)) throw notFound('Checkout');
  if (row.status !== 'pending' || row.expires_at <= new Date())
    throw new AppError('invalid_state_transition', `This payment is ${row.status === 'pending' ? 'expired' : row.status}`);
  const card = checkCard(body);
  const ctx = { tenantId: row.tenant_id, environment: row.environment as Environment };
  const saved = body.save_card
    ? await saveCard(trx, ctx, d.sealer, card, { customerId: row.customer_id, clientCustomerId: row.client_customer_id })
    : undefined;
  const result = await chargeCollection(trx, ctx, d, row, card.pan, saved?.id ?? null);
  return { status: result.status, failure_code: result.failureCode, failure_message: result.failureMessage };
}

export async function listSavedCards(db: Queryable, ctx: Scope, query: ListSavedCardsQuery): Promise<Page<SavedCardResponse>> {
  const page = await repo.listSavedCards(db, ctx, query);
  return { ...page, items: page.items.map(toSavedCard) };
}

export async function getSavedCard(db: Queryable, ctx: Scope, id: string): Promise<SavedCardResponse> {
  const row = await repo.findSavedCard(db, ctx, id);
  if (!row) throw notFound('Saved card');
  return toSavedCard(row);
}

/** Idempotent, as in the reference: success even when the card does not exist. */
/** Another business's or environment's card is 404 (contract §14); deleting one's own twice is 200. */
export async function deleteSavedCard(db: Queryable, ctx: Scope, id: string) {
  if (!(await repo.deleteSavedCard(db, ctx, id))) throw notFound('Card');
  return { success: true, message: 'card deleted successfully' };
}
