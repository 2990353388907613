import type { Config } from '../../config.js';
import type { Lock } from '../../db/scoped.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound, validationError, type ErrorDetail } from '../../core/errors.js';
import { withExtra, type Page, type PageExtra } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import type { Sealer } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import { requireCustomer } from '../customers/service.js';
import { requireFeature, requireKycLevel } from '../features/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import { cardBlocked } from './errors.js';
import * as repo from './repo.js';
import type { CardResponse, CardStatus, CreateCardBody, ListCardsQuery, SpendingControlsInput, UpdateCardStatusBody } from './schema.js';
import { TERMINAL_STATUSES } from './schema.js';
import * as secrets from './secrets.js';

/** The feature gates also read the business's settings. */
type GateCtx = Pick<RequestContext, 'tenantId' | 'environment' | 'settings'>;
/** What card services need beyond the database: settings and the secrets key. */
export interface CardDeps {
  config: Config;
  sealer: Sealer;
}

const CARD_YEARS = 4;
const DEFAULT_CURRENCY = 'USD';

// ---------- presentation ----------

export function toCardResponse(c: repo.CardRow): CardResponse {
  const limit = (v: bigint | null) => (v === null ? null : formatAmount(v, c.currency));
  const ship = c.shipping_address;
  return {
    id: c.id,
    customer_id: c.customer_id,
    card_type: c.card_type,
    name_on_card: c.name_on_card,
    masked_pan: secrets.maskPan(c.last4),
    last4: c.last4,
    expiry: secrets.expiryLong(c.expiry_month, c.expiry_year),
    status: c.status as CardStatus,
    currency: c.currency,
    network: c.network,
    // Absent, never null, where the reference types the limit as a number (docs/api-rules.md#absent-values).
    spending_controls: omitNulls(
      {
        activated: c.controls_activated,
        single_transaction_limit: limit(c.single_transaction_limit),
        daily_transaction_limit: limit(c.daily_limit),
        monthly_transaction_limit: limit(c.monthly_limit),
        allowed_merchant_categories: c.allowed_categories,
        blocked_merchant_categories: c.blocked_categories,
        type: c.card_type,
      },
      ['single_transaction_limit', 'daily_transaction_limit'],
    ),
    billing_address: c.billing_address,
    address: c.billing_address,
    shipping: ship
      ? {
          address_line1: ship.address_line1,
          address_line2: ship.address_line2 ?? null,
          city: ship.city,
          state: ship.state ?? null,
          postal_code: ship.postal_code,
          country_code: ship.country_code,
          phone_number: ship.phone_number,
          method: c.shipping_method ?? 'standard',
          fulfilment_status: c.fulfilment_status ?? 'ordered',
        }
      : null,
    date_activated: c.activated_at?.toISOString() ?? null,
    date_created: c.created_at.toISOString(),
    date_updated: c.updated_at.toISOString(),
  };
}

export function billingAddressOf(customer: { address: unknown }): repo.BillingAddress {
  const a = customer.address as { address_line1: string; city: string; state: string; postal_code: string; country: string };
  return { street: a.address_line1, city: a.city, state: a.state, postal_code: a.postal_code, country_iso_code: a.country };
}

export function cardCurrency(currency: string | undefined, config: Config): string {
  const c = currency ?? DEFAULT_CURRENCY;
  if (!config.SUPPORTED_CURRENCIES.includes(c)) {
    throw validationError([
      { field: 'currency', code: 'unsupported', message: `Cards are issued in ${config.SUPPORTED_CURRENCIES.join(', ')}` },
    ]);
  }
  return c;
}

// ---------- eligibility (the one place that gates issuing) ----------

/**
 * Whether this customer may be issued a card of this type: the one place that gates issuing.
 * KYC first (basic for virtual, intermediate for physical: the clearer error), then the feature
 * (`virtual_cards` / `physical_cards`, activated with POST /v1/risk/features/activate).
 */
async function assertMayIssue(trx: Queryable, ctx: GateCtx, customerId: string, cardType: 'virtual' | 'physical') {
  const customer = await requireCustomer(trx, ctx, customerId);
  if (customer.status !== 'active') throw new AppError('invalid_state_transition', 'The customer is not active');
  await requireKycLevel(trx, ctx, customerId, cardType === 'physical' ? 'intermediate' : 'basic');
  await requireFeature(trx, ctx, customerId, cardType === 'physical' ? 'physical_cards' : 'virtual_cards');
  return customer;
}

// ---------- cards ----------

interface Limits {
  controls_activated?: boolean;
  single_transaction_limit?: bigint | null;
  daily_limit?: bigint | null;
  monthly_limit?: bigint | null;
  allowed_categories?: string;
  blocked_categories?: string;
}

/** Spending controls input to column values; every bad amount is reported at once. */
function limitsFrom(input: SpendingControlsInput, currency: string, prefix: string): Limits {
  const details: ErrorDetail[] = [];
  const amount = (v: string | number | null | undefined, field: string) => {
    if (v === undefined || v === null) return v;
    try {
      return parseAmount(v, currency, `${prefix}${field}`);
    } catch (err) {
      if (err instanceof AppError) details.push(...err.details);
      return undefined;
    }
  };
  const out: Limits = {};
  if (input.activated !== undefined) out.controls_activated = input.activated;
  const single = amount(input.single_transaction_limit, 'single_transaction_limit');
  const daily = amount(input.daily_transaction_limit, 'daily_transaction_limit');
  const monthly = amount(input.monthly_transaction_limit, 'monthly_transaction_limit');
  if (details.length > 0) throw new AppError('invalid_amount', undefined, details);
  if (single !== undefined) out.single_transaction_limit = single;
  if (daily !== undefined) out.daily_limit = daily;
  if (monthly !== undefined) out.monthly_limit = monthly;
  if (input.allowed_merchant_categories) out.allowed_categories = JSON.stringify([...new Set(input.allowed_merchant_categories)]);
  if (input.blocked_merchant_categories) out.blocked_categories = JSON.stringify([...new Set(input.blocked_merchant_categories)]);
  return out;
}

function shippingDetails(body: CreateCardBody): ErrorDetail[] {
  if (body.card_type === 'physical' && !body.shipping_address) {
    return [{ field: 'shipping_address', code: 'required', message: 'A physical card needs a shipping address' }];
  }
  if (body.card_type === 'virtual' && body.shipping_address) {
    return [{ field: 'shipping_address', code: 'not_allowed', message: 'A virtual card is not shipped' }];
  }
  return [];
}

export async function createCard(trx: Trx, ctx: GateCtx, body: CreateCardBody, deps: CardDeps) {
  const currency = cardCurrency(body.currency, deps.config);
  const shipping = shippingDetails(body);
  if (shipping.length > 0) throw validationError(shipping);
  const cardLimit = parseAmount(body.card_limit, currency, 'card_limit');
  const limits = limitsFrom(body.spending_controls ?? {}, currency, 'spending_controls.');
  const customer = await assertMayIssue(trx, ctx, body.customer_id, body.card_type);

  const id = newId();
  const pan = secrets.generatePan(deps.config.CARD_BIN);
  const expiry = new Date();
  const { shipping_address: ship } = body;
  await repo.insertCard(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: customer.id,
    card_type: body.card_type,
    currency,
    network: secrets.networkOf(deps.config.CARD_BIN),
    name_on_card: body.name_on_card.toUpperCase(),
    last4: pan.slice(-4),
    expiry_month: expiry.getUTCMonth() + 1,
    expiry_year: expiry.getUTCFullYear() + CARD_YEARS,
    pan_sealed: deps.sealer.seal(pan, `card:${id}:pan`),
    cvv_sealed: deps.sealer.seal(secrets.generateCvv(), `card:${id}:cvv`),
    pin_sealed: deps.sealer.seal(secrets.generatePin(), `card:${id}:pin`),
    // A physical card waits in the post until its holder activates it.
    status: body.card_type === 'physical' ? 'inactive' : 'active',
    single_transaction_limit: cardLimit,
    daily_limit: cardLimit,
    ...limits,
    billing_address: JSON.stringify(billingAddressOf(customer)),
    shipping_address: JSON.stringify(ship ? { ...ship, method: undefined } : null),
    shipping_method: ship?.method ?? null,
    fulfilment_status: ship ? 'ordered' : null,
    activated_at: body.card_type === 'virtual' ? new Date() : null,
  });
  // The card's own balance: a ledger account with the card's id.
  await ledger.openAccount(trx, ctx, { id, currency });
  const card = await getCard(trx, ctx, id);
  await recordEvent(trx, ctx, 'cards.status.update', card);
  return { message: 'Card created successfully', status: true, id, fee_charged: false, fee_pending: false, card };
}

export async function requireCard(db: Queryable, ctx: Scope, id: string, lock?: Lock): Promise<repo.CardRow> {
  const row = await repo.findCard(db, ctx, id, lock);
  if (!row) throw notFound('Card');
  return row;
}

export async function getCard(db: Queryable, ctx: Scope, id: string): Promise<CardResponse> {
  return toCardResponse(await requireCard(db, ctx, id));
}

/** A page of cards; with `extra`, each item also carries the columns it joins (`extra`). */
export async function listCards<E = never>(
  db: Queryable,
  ctx: Scope,
  query: ListCardsQuery,
  extra?: PageExtra<E>,
): Promise<Page<CardResponse & { extra?: E }>> {
  const page = await repo.listCards(db, ctx, query, extra);
  return { ...page, items: page.items.map((r) => withExtra(toCardResponse(r), r, extra)) };
}

export async function getBalance(db: Queryable, ctx: Scope, id: string) {
  const card = await requireCard(db, ctx, id);
  const balance = await ledger.getBalance(db, ctx, card.id);
  if (!balance) throw new Error(`card ${card.id} has no ledger account`);
  return {
    card_id: card.id,
    balance: formatAmount(balance.posted, card.currency),
    available_balance: formatAmount(balance.available, card.currency),
    currency: card.currency,
  };
}

export function assertNotTerminal(card: repo.CardRow): void {
  if ((TERMINAL_STATUSES as readonly string[]).includes(card.status)) {
    throw cardBlocked(card.status);
  }
}

/**
 * The card status machine (docs/api-rules.md#closed-lists): inactive -> active (activation); active <->
 * freeze; any live status -> blocked | lost | stolen, which are final. Same status: no change.
 */
function checkTransition(from: string, to: CardStatus): void {
  if ((TERMINAL_STATUSES as readonly string[]).includes(from)) {
    throw cardBlocked(from);
  }
  if (from === 'inactive' && to === 'freeze') {
    throw new AppError('invalid_state_transition', 'An inactive card must be activated before it can be frozen');
  }
}

export async function updateStatus(trx: Trx, ctx: Scope, id: string, body: UpdateCardStatusBody): Promise<CardResponse> {
  const card = await requireCard(trx, ctx, id, 'update');
  checkTransition(card.status, body.status);
  const patch: Parameters<typeof repo.updateCard>[3] = {};
  if (body.limit !== undefined) {
    const limit = parseAmount(body.limit, card.currency, 'limit');
    patch.single_transaction_limit = limit;
    patch.daily_limit = limit;
  }
  const changed = card.status !== body.status;
  if (changed) {
    if (body.status === 'active' && secrets.isExpired(card.expiry_month, card.expiry_year)) {
      throw new AppError('invalid_state_transition', 'The card has expired');
    }
    patch.status = body.status;
    if (card.status === 'inactive' && body.status === 'active') {
      patch.activated_at = new Date();
      // Activation is the holder saying the card arrived.
      if (card.card_type === 'physical') patch.fulfilment_status = 'delivered';
    }
  }
  if (Object.keys(patch).length > 0) await repo.updateCard(trx, ctx, id, patch);
  const updated = await getCard(trx, ctx, id);
  if (changed) await recordEvent(trx, ctx, 'cards.status.update', updated);
  return updated;
}

export async function updateSpendingControls(trx: Trx, ctx: Scope, id: string, body: SpendingControlsInput): Promise<CardResponse> {
  const card = await requireCard(trx, ctx, id, 'update');
  assertNotTerminal(card);
  const limits = limitsFrom(body, card.currency, '');
  if (Object.keys(limits).length > 0) await repo.updateCard(trx, ctx, id, limits);
  return getCard(trx, ctx, id);
}

export async function updatePin(trx: Trx, ctx: Scope, id: string, pin: string, deps: CardDeps) {
  if (secrets.isWeakPin(pin)) {
    throw validationError([
      { field: 'card_pin', code: 'weak_pin', message: 'Choose a PIN that is not a repeated digit or a simple sequence' },
    ]);
  }
  const card = await requireCard(trx, ctx, id, 'update');
  assertNotTerminal(card);
  await repo.updateCard(trx, ctx, id, { pin_sealed: deps.sealer.seal(pin, `card:${id}:pin`) });
  return { message: 'Card PIN updated successfully' };
}

/** Sandbox: the card's fulfilment moves on (shipped, delivered, returned). */
export async function simulateFulfilment(trx: Trx, ctx: Scope, id: string, status: 'shipped' | 'delivered' | 'returned') {
  const card = await requireCard(trx, ctx, id, 'update');
  if (card.card_type !== 'physical') throw new AppError('invalid_state_transition', 'A virtual card is not shipped');
  const order = ['ordered', 'shipped', 'delivered', 'returned'];
  if (order.indexOf(status) <= order.indexOf(card.fulfilment_status ?? 'ordered')) {
    throw new AppError('invalid_state_transition', `The card is already ${card.fulfilment_status}`);
  }
  await repo.updateCard(trx, ctx, id, { fulfilment_status: status });
  return getCard(trx, ctx, id);
}

// ---------- for money movements (transfers, payments) ----------

/** A card movement as the card transaction list and the cards.transaction.* events show it. */
export function cardTransactionEvent(row: transactions.TransactionRow, card: repo.CardRow) {
  return { ...transactions.toTransactionResponse(row), card_id: card.id, card_type: card.card_type };
}

/**
 * For the card funding branch of transfers: the card, 404 when unknown, 409 when it can never be
 * used again. Deliberately read without a row lock: funding only touches ledger balance rows (which
 * the transfer batch locks up front, in id order), and locking the card row after them would invert
 * the order authorizations use (card row, then balance) and deadlock. A card blocked at the same
 * instant may still receive the money, which it can then withdraw.
 */
export async function cardForFunding(trx: Trx, ctx: Scope, cardId: string) {
  const card = await repo.findCard(trx, ctx, cardId);
  if (!card) {
    throw notFound('Card', [{ field: 'destination.id', code: 'not_found', message: 'No such card' }]);
  }
  if ((TERMINAL_STATUSES as readonly string[]).includes(card.status)) {
    throw cardBlocked(card.status, [
      { field: 'destination.id', code: 'card_blocked', message: 'Blocked, lost and stolen cards cannot receive money' },
    ]);
  }
  return card;
}

// ---------- secrets ----------

/** Full card number, CVV and expiry, sealed for the client's RSA key only. */
export async function sensitiveDetails(db: Queryable, ctx: Scope, id: string, header: string | string[] | undefined, deps: CardDeps) {
  const key = secrets.parseClientPublicKey(header);
  const card = await requireCard(db, ctx, id);
  return secrets.clientEnvelope(key, {
    card_number: deps.sealer.open(card.pan_sealed, `card:${id}:pan`),
    cvv: deps.sealer.open(card.cvv_sealed, `card:${id}:cvv`),
    expiry: secrets.expiryShort(card.expiry_month, card.expiry_year),
  });
}

export async function pinDetails(db: Queryable, ctx: Scope, id: string, header: string | string[] | undefined, deps: CardDeps) {
  const key = secrets.parseClientPublicKey(header);
  const card = await requireCard(db, ctx, id);
  return secrets.clientEnvelope(key, { pin: deps.sealer.open(card.pin_sealed, `card:${id}:pin`) });
}
