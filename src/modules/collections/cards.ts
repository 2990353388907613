import type { LockPlan } from '../../db/pipeline.js';
import type { Queryable, Trx } from '../../db/client.js';
import { groupByScope, scopeKey, soleScope, type Environment, type Scope } from '../../core/context.js';
import { AppError, notFound, refusalOf, validationError, type ErrorDetail, type ItemOutcome } from '../../core/errors.js';
import type { WriteSet } from '../../db/write-set.js';
import type { Page } from '../../db/pagination.js';
import { cardBrand, expiringSoon, isCvv, luhnValid, parseExpiry } from '../../lib/cards.js';
import { randomBase62, type Sealer } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import { cardAcquirer } from '../../rails/card-acquiring.js';
import { requireCustomer } from '../customers/service.js';
import { endCollections, endDecided, lockCollectionsOf, lockCollectionsStatement, type End, type Ending } from './lifecycle.js';
import * as repo from './repo.js';
import type { ChargeCardBody, CheckoutPayBody, CreatePaymentIntentBody, ListSavedCardsQuery, SavedCardResponse } from './schema.js';
import { destinationAccount, insertPending, paymentLink, sessionMatches, toResponse, type CollectionDeps } from './service.js';

/**
 * Card collections: card numbers arrive only on the hosted checkout page (or, in sandbox, the
 * card-token simulation), are sealed with the data key at once, and never logged or returned.
 * The CVV is checked for shape, passed to the acquirer, and dropped.
 */
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

/** What the acquirer says of charging `pan` for a pending card collection: completed, or failed with the decline. */
async function chargeEnding(ctx: Scope, row: repo.CollectionRow, pan: string, savedCardId: string | null): Promise<Ending> {
  const result = await cardAcquirer(ctx.environment as Environment).charge({ pan, amount: row.amount, currency: row.currency });
  if (!result.approved) return { status: 'failed', detailedStatus: 'provider_failed', code: result.code, reason: result.message };
  return { status: 'completed', detailedStatus: 'completed', savedCardId };
}

const tokenNotFound = () =>
  notFound('Card token', [{ field: 'card_token', code: 'not_found', message: 'No saved card with this token for this customer' }]);

/** How charging a saved card ends the collection: 404 unknown or another customer's, failed when expired, else the acquirer's word. */
async function tokenEnding(ctx: Scope, d: CollectionDeps, row: repo.CollectionRow, card: repo.SavedCardRow | undefined): Promise<Ending> {
  if (!card || (card.customer_id !== null && card.customer_id !== row.customer_id)) throw tokenNotFound();
  if (!parseExpiry(`${card.card_exp_month}/${card.card_exp_year}`)) {
    return { status: 'failed', detailedStatus: 'provider_failed', code: 'expired_card', reason: 'The saved card has expired' };
  }
  return chargeEnding(ctx, row, d.sealer.open(card.card_sealed, sealContext(card.id)), card.id);
}

/** A card charge's result as the payment intent and charge responses show it. */
function chargeResult(d: CollectionDeps, ended: repo.CollectionRow) {
  return ended.status === 'completed'
    ? {
        status: 'succeeded' as const,
        transactionId: toResponse(d, ended).account_transaction_id ?? null,
        failureCode: null,
        failureMessage: null,
      }
    : { status: 'failed' as const, transactionId: null, failureCode: ended.failure_code, failureMessage: ended.failure_reason };
}

/** Ends one collection as a charge decided (a batch of one): its result. */
async function endCharge(trx: Trx, ctx: Scope, d: CollectionDeps, row: repo.CollectionRow, ending: Ending) {
  const [ended] = await endCollections(trx, [{ ctx, d, row, ending }]);
  if (ended instanceof AppError) throw ended;
  return chargeResult(d, ended!);
}

function intentResponse(d: CollectionDeps, row: repo.CollectionRow, charge?: ReturnType<typeof chargeResult>) {
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
  const ending = await tokenEnding(ctx, d, row, await repo.findSavedCardByToken(trx, ctx, body.card_token));
  return intentResponse(d, row, await endCharge(trx, ctx, d, row, ending));
}

/** A charge of a saved card for a payment intent (POST /v1/collections/cards/payment-intents/charge). */
export interface ChargeRequest {
  ctx: Scope;
  d: CollectionDeps;
  body: ChargeCardBody;
}

export type ChargeResponse = ReturnType<typeof chargeResponse>;

/** What a batch of charges reads first: its payment intents' rows (locked) and the saved cards named, keyed by scope. */
export interface ChargeFirstReads {
  rows: Map<string, repo.CollectionRow>;
  cards: Map<string, repo.SavedCardRow>;
}

/**
 * The first reads of a batch of charges of one business and environment, known from the requests
 * alone: the payment intents locked (ascending id, as alone) and the saved cards. The caller sends
 * both right behind the idempotency claim (http/idempotency-batch.ts): two round trips fewer than
 * reading them after it, one after the other. Undefined when the batch spans businesses:
 * chargeCards reads them itself.
 */
export function planChargeReads(trx: Trx, reqs: ChargeRequest[]): LockPlan<ChargeFirstReads> | undefined {
  const ctx = soleScope(reqs);
  if (!ctx) return undefined;
  const key = scopeKey(ctx);
  const intents = lockCollectionsStatement(
    trx,
    ctx,
    reqs.map((r) => r.body.payment_intent_id),
  );
  const cardsQuery = repo.savedCardsByTokensQuery(
    trx,
    ctx,
    reqs.map((r) => r.body.card_token),
  );
  return {
    statements: [intents.statement, cardsQuery.compile()],
    read: ([rows, cards]) => ({
      rows: intents.read(rows!),
      cards: new Map((cards as repo.SavedCardRow[]).map((card) => [`${key}:${card.card_token}`, card])),
    }),
  };
}

function chargeResponse(paymentIntentId: string, result: ReturnType<typeof chargeResult>) {
  return {
    payment_intent_id: paymentIntentId,
    transaction_id: result.transactionId,
    status: result.status,
    requires_action: false,
    failure_code: result.failureCode,
    failure_message: result.failureMessage,
  };
}

/**
 * Charges of saved cards as ONE unit (concurrent charges are gathered like transfers,
 * docs/money-path.md): the payment intents locked set-wise, the cards read set-wise, each charge
 * checked and decided in arrival order (404 unknown intent or card, 409 no longer pending, also
 * when an earlier charge of the batch ended it), then every collection ended together
 * (lifecycle.ts endCollections: the settlements in one posting batch, the writes in one
 * statement). A decline answers 200 with status `failed`, as alone. One outcome per request.
 */
export async function chargeCards(
  trx: Trx,
  reqs: ChargeRequest[],
  writes?: WriteSet,
  first?: ChargeFirstReads,
): Promise<ItemOutcome<ChargeResponse>[]> {
  const { rows, cards } = first ?? (await readFirst(trx, reqs));
  // What an earlier charge of the batch ended an intent as: a later one finds it so.
  const endedAs = new Map<string, repo.CollectionStatus>();
  const decided: (End | AppError)[] = [];
  for (const { ctx, d, body } of reqs) {
    const end = await refusalOf(async () => {
      const row = rows.get(`${scopeKey(ctx)}:${body.payment_intent_id}`);
      if (!row || row.method !== 'card') throw notFound('Payment intent');
      const status = endedAs.get(row.id) ?? row.status;
      if (status !== 'pending') throw new AppError('invalid_state_transition', `The payment intent is already ${status}`);
      const ending = await tokenEnding(ctx, d, row, cards.get(`${scopeKey(ctx)}:${body.card_token}`));
      endedAs.set(row.id, ending.status);
      return { ctx, d, row, ending };
    });
    decided.push(end);
  }
  const ended = await endDecided(trx, decided, writes);
  return ended.map((result, i) =>
    result instanceof AppError
      ? { ok: false, error: result }
      : { ok: true, data: chargeResponse(result.id, chargeResult(reqs[i]!.d, result)) },
  );
}

/** A batch's first reads, one business after another (planChargeReads sends them with the claim instead). */
async function readFirst(trx: Trx, reqs: ChargeRequest[]): Promise<ChargeFirstReads> {
  const rows = await lockCollectionsOf(
    trx,
    reqs.map((r) => ({ ctx: r.ctx, id: r.body.payment_intent_id })),
  );
  const cards = new Map<string, repo.SavedCardRow>();
  const tokens = groupByScope(reqs.map((r) => ({ ctx: r.ctx, values: [r.body.card_token] })));
  for (const { key, ctx, values } of tokens) {
    for (const card of await repo.findSavedCardsByTokens(trx, ctx, values)) cards.set(`${key}:${card.card_token}`, card);
  }
  return { rows, cards };
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
  const result = await endCharge(trx, ctx, d, row, await chargeEnding(ctx, row, card.pan, saved?.id ?? null));
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
/** Another business's or environment's card is 404 (docs/api-rules.md#isolation); deleting one's own twice is 200. */
export async function deleteSavedCard(db: Queryable, ctx: Scope, id: string) {
  if (!(await repo.deleteSavedCard(db, ctx, id))) throw notFound('Card');
  return { success: true, message: 'card deleted successfully' };
}
