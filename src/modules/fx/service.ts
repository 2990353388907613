import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import { formatAmount, isKnownCurrency, parseAmount } from '../../lib/money.js';
import { newId } from '../../lib/ids.js';
import { SandboxRateSource, StaticRateSource, type RateBook, type RatePlan, type RateSource } from '../../rails/fx.js';
import { assertConvertible, convert, counterAmount, formatRate, invertRate, parseRate, rateFromDb } from '../../lib/decimal.js';
import { fxCustomerRate, fxFee, fxPricing } from '../pricing/service.js';
import { CURRENCY_NAMES } from './currencies.js';
import * as repo from './repo.js';
import type { QuoteBody, QuoteResponse, RatesQuery, SimulateRateBody } from './schema.js';

/**
 * FX rates and quotes, and the functions other modules (international payouts) use:
 * `getRate` (the current customer rate for a pair), `convertAmount` (exact conversion with the
 * documented rounding rule) and `conversionLegs` (the ledger legs through the fx_position accounts).
 *
 * Rounding rule: a rate is applied to the exact amount the client named; the counter amount is
 * rounded once, in favour of the house, to its currency's minor unit: an amount the customer
 * receives rounds down, an amount the customer pays rounds up. The remainder (< 1 minor unit) is
 * never booked to the customer and shows in the fx_position account's balance.
 */
type SettingsScope = Scope & Partial<Pick<RequestContext, 'settings'>>;

const SOURCES: Record<RequestContext['environment'], RateSource> = {
  sandbox: new SandboxRateSource(repo.sandboxRates),
  live: new StaticRateSource(),
};

/** The business's rate book, read in `db` (inside the caller's transaction). */
export async function rateBook(db: Queryable, ctx: Scope): Promise<RateBook> {
  const plan = rateBookPlan(db, ctx);
  return plan.read(plan.statement ? (await db.executeQuery(plan.statement)).rows : []);
}

/** rateBook as a statement sent with others (db/pipeline.ts; none when the source reads nothing), and how to read it. */
export function rateBookPlan(db: Queryable, ctx: Scope): RatePlan {
  return SOURCES[ctx.environment].plan(db, ctx);
}

/** The display name of a currency FX can price (e.g. `Nigerian Naira`). */
export function currencyName(code: string): string | undefined {
  return CURRENCY_NAMES[code];
}

/** Configured currencies that have a minor-unit exponent and a default market rate. */
export function supportedCurrencies(config: Config): string[] {
  return config.SUPPORTED_CURRENCIES.filter((c) => isKnownCurrency(c) && CURRENCY_NAMES[c] !== undefined);
}

export function listSupportedPairs(config: Config) {
  const ccys = supportedCurrencies(config);
  return ccys.flatMap((from) =>
    ccys
      .filter((to) => to !== from)
      .map((to) => ({
        from_currency: from,
        to_currency: to,
        currency_pair: `${from}/${to}`,
        pair_type: 'fiat/fiat' as const,
        // supportedCurrencies() keeps only currencies with a name.
        from_currency_name: CURRENCY_NAMES[from] as string,
        to_currency_name: CURRENCY_NAMES[to] as string,
      })),
  );
}

/** 400 unless both currencies are supported, distinct and priced. */
export function assertPair(book: RateBook, base: string, quote: string, fields = ['from_currency', 'to_currency'], config: Config) {
  const ccys = supportedCurrencies(config);
  const details = [base, quote].flatMap((c, i) =>
    ccys.includes(c) ? [] : [{ field: fields[i] as string, code: 'unsupported_currency', message: `${c} is not a supported FX currency` }],
  );
  if (details.length === 0 && base === quote) {
    details.push({ field: fields[1] as string, code: 'invalid', message: 'Must differ from the other currency' });
  }
  if (details.length > 0) throw new AppError('validation_failed', `Currency pair ${base}/${quote} is not supported`, details);
  const mid = book.mid(base, quote);
  if (!mid)
    throw new AppError('validation_failed', `No rate for ${base}/${quote}`, [
      { field: fields[1] as string, code: 'unsupported_pair', message: 'No rate for this pair' },
    ]);
  return mid;
}

export interface FxRate {
  base: string;
  quote: string;
  side: 'buy' | 'sell';
  midRate: string;
  /** Customer rate (quote units per base unit), spread included. */
  rate: string;
  spreadBps: number;
  timestamp: Date;
}

/**
 * The current customer rate for a pair. `sell` (default): the customer gives `base` and receives
 * `quote` (bid); `buy`: the customer receives `base` and pays `quote` (ask).
 */
export async function getRate(
  db: Queryable,
  ctx: SettingsScope,
  base: string,
  quote: string,
  side: 'buy' | 'sell' = 'sell',
  config: Config,
): Promise<FxRate> {
  const mid = assertPair(await rateBook(db, ctx), base, quote, ['base', 'quote'], config);
  const { spreadBps } = fxPricing(ctx.settings, config);
  return {
    base,
    quote,
    side,
    midRate: formatRate(mid.mid),
    rate: formatRate(fxCustomerRate(mid.mid, spreadBps, side)),
    spreadBps,
    timestamp: mid.timestamp,
  };
}

/**
 * Converts `amount` minor units of `from` into `to` at `rate` (a decimal string, to-units per
 * from-unit) exactly, rounded once to `to`'s minor unit: `down` (default) for an amount the
 * customer receives, `up` for an amount the customer pays.
 */
export function convertAmount(amount: bigint, from: string, to: string, rate: string, rounding: 'down' | 'up' = 'down'): bigint {
  return convert(amount, from, to, parseRate(rate), rounding);
}

export interface ConversionInput {
  fromAccountId: string;
  givenCurrency: string;
  given: bigint;
  toAccountId: string;
  receivedCurrency: string;
  received: bigint;
  fee?: bigint;
  feeAccountId?: string;
}

/**
 * The legs of a conversion, for ONE ledger posting: the payer's account gives `given` (+ `fee`)
 * of `givenCurrency`; `given` goes to that currency's fx_position account and the fee to
 * `feeAccountId`; the other currency's fx_position account gives `received` to the receiving
 * account. Each currency sums to zero, so no minor unit is created or lost.
 */
export async function conversionLegs(trx: Queryable, scope: Scope, input: ConversionInput): Promise<ledger.Leg[]> {
  const positionGiven = await ledger.systemAccount(trx, scope, 'fx_position', input.givenCurrency);
  const positionReceived = await ledger.systemAccount(trx, scope, 'fx_position', input.receivedCurrency);
  return legsThrough({ given: positionGiven, received: positionReceived }, input);
}

/** conversionLegs with the fx_position accounts of both currencies already known (a batch looks them up once). */
export function legsThrough(positions: { given: string; received: string }, input: ConversionInput): ledger.Leg[] {
  const fee = input.fee ?? 0n;
  const legs: ledger.Leg[] = [
    { accountId: input.fromAccountId, amount: -(input.given + fee), currency: input.givenCurrency },
    { accountId: positions.given, amount: input.given, currency: input.givenCurrency },
    { accountId: positions.received, amount: -input.received, currency: input.receivedCurrency },
    { accountId: input.toAccountId, amount: input.received, currency: input.receivedCurrency },
  ];
  if (fee > 0n) {
    if (!input.feeAccountId) throw new ledger.LedgerInvariantError('a conversion fee needs a fee account');
    legs.push({ accountId: input.feeAccountId, amount: fee, currency: input.givenCurrency });
  }
  return legs;
}

export async function listRates(db: Queryable, ctx: SettingsScope, query: RatesQuery, config: Config) {
  const book = await rateBook(db, ctx);
  const { spreadBps } = fxPricing(ctx.settings, config);
  const wanted = query.currency_pairs ? new Set(query.currency_pairs.split(',').map((p) => p.trim().toUpperCase())) : undefined;
  const pairs = listSupportedPairs(config).filter(
    (p) =>
      (!query.from_currency || p.from_currency === query.from_currency.toUpperCase()) &&
      (!query.to_currency || p.to_currency === query.to_currency.toUpperCase()) &&
      (!wanted || wanted.has(p.currency_pair)),
  );
  const directions = query.direction ? [query.direction] : (['BUY', 'SELL'] as const);
  return pairs.flatMap((p) => {
    const mid = book.mid(p.from_currency, p.to_currency);
    if (!mid) return [];
    return directions.map((direction) => ({
      ...p,
      direction,
      rate: formatRate(fxCustomerRate(mid.mid, spreadBps, direction === 'BUY' ? 'buy' : 'sell')),
      mid_rate: formatRate(mid.mid),
      spread_bps: spreadBps,
      timestamp: mid.timestamp.toISOString(),
    }));
  });
}

/** Sandbox only: sets the business's market (mid) rate for a pair; live keys get 404. */
export async function simulateRate(trx: Trx, ctx: Scope, body: SimulateRateBody, config: Config) {
  if (ctx.environment !== 'sandbox') throw notFound('Route');
  assertPair(await rateBook(trx, ctx), body.base, body.quote, ['base', 'quote'], config);
  const rate = parseRate(body.rate);
  const inverse = invertRate(rate);
  if (inverse === 0n) {
    throw new AppError('validation_failed', 'rate: too large', [
      { field: 'rate', code: 'invalid', message: 'The reverse rate would round to zero' },
    ]);
  }
  const updatedAt = await repo.upsertSandboxRate(trx, ctx, body.base, body.quote, formatRate(rate));
  return {
    base: body.base,
    quote: body.quote,
    rate: formatRate(rate),
    inverse_rate: formatRate(inverse),
    timestamp: updatedAt.toISOString(),
  };
}

export function toQuoteResponse(row: repo.QuoteRow): QuoteResponse {
  const rate = rateFromDb(row.rate);
  const paid = row.direction === 'SELL' ? row.amount : row.to_amount;
  const feeCurrency = row.direction === 'SELL' ? row.from_currency : row.to_currency;
  return {
    quote_id: row.id,
    from_currency: row.from_currency,
    to_currency: row.to_currency,
    amount: formatAmount(row.amount, row.from_currency),
    direction: row.direction,
    rate: formatRate(rate),
    mid_rate: formatRate(rateFromDb(row.mid_rate)),
    spread_bps: row.spread_bps,
    fee: formatAmount(fxFee(paid, row.fee_bps), feeCurrency),
    fee_currency: feeCurrency,
    display_rate: formatRate(rate),
    display_rate_label: `1 ${row.from_currency} = ${formatRate(rate)} ${row.to_currency}`,
    to_currency_amount: formatAmount(row.to_amount, row.to_currency),
    expires_at: row.expires_at.toISOString(),
    created_at: row.created_at.toISOString(),
  };
}

/**
 * A quote locks the customer rate for FX_QUOTE_TTL_SECONDS. SELL: the customer gives `amount`
 * of from_currency and receives to_currency_amount (rounded down); BUY: the customer receives
 * `amount` of from_currency and pays to_currency_amount (rounded up). An order uses it once.
 */
export async function createQuote(trx: Trx, ctx: SettingsScope, body: QuoteBody, config: Config): Promise<QuoteResponse> {
  const mid = assertPair(await rateBook(trx, ctx), body.from_currency, body.to_currency, undefined, config);
  const amount = parseAmount(body.amount, body.from_currency);
  const { spreadBps, feeBps } = fxPricing(ctx.settings, config);
  const side = body.direction === 'BUY' ? 'buy' : 'sell';
  const rate = fxCustomerRate(mid.mid, spreadBps, side);
  const toAmount = counterAmount(side, amount, body.from_currency, body.to_currency, rate);
  assertConvertible(toAmount);
  const row = await repo.insertQuote(
    trx,
    {
      id: newId(),
      tenant_id: ctx.tenantId,
      environment: ctx.environment,
      from_currency: body.from_currency,
      to_currency: body.to_currency,
      direction: body.direction,
      amount,
      to_amount: toAmount,
      mid_rate: formatRate(mid.mid),
      rate: formatRate(rate),
      spread_bps: spreadBps,
      fee_bps: feeBps,
    },
    config.FX_QUOTE_TTL_SECONDS,
  );
  return toQuoteResponse(row);
}

/** A quote's locked terms, for an order or an international transfer that uses it. */
export interface LockedQuote {
  id: string;
  fromCurrency: string;
  toCurrency: string;
  direction: 'BUY' | 'SELL';
  /** from_currency minor units */
  amount: bigint;
  /** to_currency minor units: received (SELL) or paid (BUY) */
  toAmount: bigint;
  rate: string;
  midRate: string;
  spreadBps: number;
  feeBps: number;
  expiresAt: Date;
}

function toLockedQuote(q: repo.QuoteRow): LockedQuote {
  return {
    id: q.id,
    fromCurrency: q.from_currency,
    toCurrency: q.to_currency,
    direction: q.direction,
    amount: q.amount,
    toAmount: q.to_amount,
    rate: formatRate(rateFromDb(q.rate)),
    midRate: formatRate(rateFromDb(q.mid_rate)),
    spreadBps: q.spread_bps,
    feeBps: q.fee_bps,
    expiresAt: q.expires_at,
  };
}

/** A quote of this business and environment, locked until the caller commits (404 otherwise). */
export async function lockQuote(trx: Trx, ctx: Scope, quoteId: string): Promise<LockedQuote> {
  const q = await repo.findQuote(trx, ctx, quoteId, 'update');
  if (!q) throw quoteNotFound();
  return toLockedQuote(q);
}

/**
 * Marks a locked quote used by `usedBy` (an order or transfer id), at most once and only before
 * it expires (database clock): else 409 quote_used / quote_expired. Rolled back with the caller's
 * transaction, so a failed order (422) leaves the quote usable.
 */
export async function redeemQuote(trx: Trx, ctx: Scope, quoteId: string, usedBy: string): Promise<void> {
  if (await repo.useQuote(trx, ctx, quoteId, usedBy)) return;
  const q = await repo.findQuote(trx, ctx, quoteId);
  throw q?.used_at ? quoteUsed() : quoteExpired();
}

export const quoteUsed = () => new AppError('quote_used');
export const quoteExpired = () => new AppError('quote_expired');

/** A quote locked for a batch of orders: its terms, and whether it can still be redeemed. */
export interface QuoteState {
  quote: LockedQuote;
  used: boolean;
  /** Not expired by the database clock, read under the lock. */
  live: boolean;
}

/**
 * The quotes `ids` of one business and environment, locked until the caller commits (ascending
 * id), by id; an unknown id is absent. A batch of orders redeems them in its write set
 * (repo.markQuotesUsed) after checking `used` and `live`, as redeemQuote would.
 */
export async function lockQuotes(trx: Trx, ctx: Scope, ids: string[]): Promise<Map<string, QuoteState>> {
  const rows = await repo.lockQuotes(trx, ctx, ids);
  return new Map(rows.map((q) => [q.id, { quote: toLockedQuote(q), used: q.used_at !== null, live: q.live }]));
}

export const quoteNotFound = () => notFound('Quote', [{ field: 'quote_id', code: 'not_found', message: 'No such quote' }]);
