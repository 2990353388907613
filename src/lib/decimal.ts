import { AppError } from '../core/errors.js';
import { currencyExponent } from './money.js';

/**
 * Exchange-rate arithmetic without floats. A rate is a fixed-point bigint with RATE_DP decimal
 * places (`1600.5` is 1600500000000000n): the number of quote-currency major units one unit of the
 * base currency buys. Amounts are bigint minor units (lib/money.ts).
 */
export const RATE_DP = 12;
export const RATE_ONE = 10n ** BigInt(RATE_DP);
const BPS_ONE = 10_000n;

const RATE_RE = /^(\d{1,9})(?:\.(\d+))?$/;

/** A client's rate (`"17.50"`, `17.5`) to fixed point: > 0, at most 12 decimals, < 10^9. */
export function parseRate(input: unknown, field = 'rate'): bigint {
  const fail = (why: string) => new AppError('validation_failed', `${field}: ${why}`, [{ field, code: 'invalid', message: why }]);
  if (typeof input !== 'string' && typeof input !== 'number') throw fail('must be a decimal string such as "17.50"');
  const match = RATE_RE.exec(typeof input === 'number' ? String(input) : input.trim());
  if (!match) throw fail('must be a positive decimal number such as "17.50"');
  const fraction = match[2] ?? '';
  if (fraction.length > RATE_DP) throw fail(`at most ${RATE_DP} decimal places`);
  const rate = BigInt((match[1] ?? '0') + fraction.padEnd(RATE_DP, '0'));
  if (rate <= 0n) throw fail('must be greater than zero');
  return rate;
}

/** A `numeric` column (a decimal string, possibly with trailing zeros) to fixed point. */
export function rateFromDb(text: string): bigint {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole + fraction.slice(0, RATE_DP).padEnd(RATE_DP, '0'));
}

/** Fixed point to the API's decimal string: trailing zeros trimmed, at least 2 decimals. */
export function formatRate(rate: bigint): string {
  const digits = rate.toString().padStart(RATE_DP + 1, '0');
  const whole = digits.slice(0, -RATE_DP);
  let fraction = digits.slice(-RATE_DP).replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${whole}.${fraction}`;
}

function divRound(n: bigint, d: bigint, mode: 'down' | 'up' | 'half_up'): bigint {
  // Operands here are never negative, so bigint division already truncates toward floor.
  const q = n / d;
  const r = n % d;
  if (r === 0n) return q;
  if (mode === 'up') return q + 1n;
  if (mode === 'half_up') return r * 2n >= d ? q + 1n : q;
  return q;
}

/** quote-per-base from two "units per reference currency" figures (mid rates, half-up). */
export function crossRate(basePerRef: bigint, quotePerRef: bigint): bigint {
  return divRound(quotePerRef * RATE_ONE, basePerRef, 'half_up');
}

/** 1 / rate, half-up (the reverse direction of a mid rate). */
export function invertRate(rate: bigint): bigint {
  return divRound(RATE_ONE * RATE_ONE, rate, 'half_up');
}

/**
 * The customer's rate from the mid rate: selling the base the customer gets the bid (mid less the
 * spread, rounded down), buying it they pay the ask (mid plus the spread, rounded up). Both
 * roundings favour the house, so the spread is never negative.
 */
export function customerRate(mid: bigint, spreadBps: number, side: 'buy' | 'sell'): bigint {
  const bps = BigInt(spreadBps);
  return side === 'sell' ? divRound(mid * (BPS_ONE - bps), BPS_ONE, 'down') : divRound(mid * (BPS_ONE + bps), BPS_ONE, 'up');
}

/**
 * Converts `amount` minor units of `from` into minor units of `to` at `rate` (to-units per
 * from-unit, major units), exactly, then rounds once to `to`'s minor unit: `down` for an amount the
 * customer receives, `up` for an amount the customer pays. The rounding remainder (< 1 minor unit)
 * is never booked to the customer: it stays with the house in the fx_position account.
 */
export function convert(amount: bigint, from: string, to: string, rate: bigint, mode: 'down' | 'up'): bigint {
  const numerator = amount * rate * 10n ** BigInt(currencyExponent(to));
  const denominator = RATE_ONE * 10n ** BigInt(currencyExponent(from));
  return divRound(numerator, denominator, mode);
}

/** A fee of `bps` basis points on `amount`, rounded up to the minor unit (0 bps: no fee). */
export function feeFor(amount: bigint, bps: number): bigint {
  return bps <= 0 ? 0n : divRound(amount * BigInt(bps), BPS_ONE, 'up');
}

/** Amounts stay within 15 significant digits (docs/api-rules.md#formats), far inside int8. */
export const MAX_MINOR = 10n ** 15n - 1n;

/** 400 invalid_amount unless a converted amount is at least one minor unit and within MAX_MINOR. */
export function assertConvertible(...amounts: bigint[]): void {
  for (const value of amounts) {
    if (value <= 0n || value > MAX_MINOR) {
      const why = value <= 0n ? 'Converts to less than one minor unit' : 'The converted amount is too large';
      throw new AppError('invalid_amount', `amount: ${why.toLowerCase()}`, [{ field: 'amount', code: 'invalid_amount', message: why }]);
    }
  }
}

/**
 * Rate from base to quote in the direction of the order: `sell` gives `amount` of the base and
 * receives quote units (rounded down); `buy` receives `amount` of the base and pays quote units
 * (rounded up). Returns the counter amount in quote minor units.
 */
export function counterAmount(side: 'buy' | 'sell', amount: bigint, base: string, quote: string, rate: bigint): bigint {
  return convert(amount, base, quote, rate, side === 'sell' ? 'down' : 'up');
}
