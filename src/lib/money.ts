import { AppError } from '../core/errors.js';

/** ISO 4217 minor-unit exponents for the currencies this service knows. */
const EXPONENTS: Record<string, number> = {
  AED: 2,
  AUD: 2,
  BHD: 3,
  BRL: 2,
  BWP: 2,
  CAD: 2,
  CHF: 2,
  CNY: 2,
  CZK: 2,
  DKK: 2,
  EGP: 2,
  ETB: 2,
  EUR: 2,
  GBP: 2,
  GHS: 2,
  HKD: 2,
  INR: 2,
  JPY: 0,
  KES: 2,
  KWD: 3,
  MAD: 2,
  MWK: 2,
  MXN: 2,
  NGN: 2,
  NOK: 2,
  NZD: 2,
  PLN: 2,
  RWF: 0,
  SEK: 2,
  SGD: 2,
  TZS: 2,
  UGX: 0,
  USD: 2,
  XAF: 0,
  XOF: 0,
  ZAR: 2,
  ZMW: 2,
};

export function isKnownCurrency(code: string): boolean {
  return code in EXPONENTS;
}

export function currencyExponent(currency: string): number {
  const exponent = EXPONENTS[currency];
  if (exponent === undefined) throw new AppError('validation_failed', `Unknown currency ${currency}`);
  return exponent;
}

const DECIMAL_RE = /^(\d+)(?:\.(\d+))?$/;
const MAX_SIGNIFICANT_DIGITS = 15;

/**
 * A client amount in major units (JSON number or decimal string) to integer minor units.
 * The text is judged as sent (see lib/json.ts): too many fraction digits, zero, negative, NaN,
 * exponent notation or more than 15 significant digits are all 400 invalid_amount.
 */
export function parseAmount(input: unknown, currency: string, field = 'amount'): bigint {
  const exponent = currencyExponent(currency);
  const fail = (why: string) => new AppError('invalid_amount', `${field}: ${why}`, [{ field, code: 'invalid_amount', message: why }]);
  if (typeof input !== 'string' && typeof input !== 'number') throw fail('must be a decimal string or number');
  const text = typeof input === 'number' ? String(input) : input.trim();
  const match = DECIMAL_RE.exec(text);
  if (!match) throw fail('must be a positive decimal number such as "100.50"');
  const whole = match[1] ?? '0';
  const fraction = match[2] ?? '';
  if (fraction.length > exponent) {
    throw fail(`${currency} allows at most ${exponent} decimal places`);
  }
  const significant = (whole.replace(/^0+/, '') + fraction).replace(/^0+/, '');
  if (significant.length > MAX_SIGNIFICANT_DIGITS) throw fail(`at most ${MAX_SIGNIFICANT_DIGITS} significant digits`);
  const minor = BigInt(whole + fraction.padEnd(exponent, '0'));
  if (minor <= 0n) throw fail('must be greater than zero');
  return minor;
}

/** Minor units to the API's decimal string with exactly the currency's exponent. */
export function formatAmount(minor: bigint, currency: string): string {
  const exponent = currencyExponent(currency);
  const negative = minor < 0n;
  const digits = (negative ? -minor : minor).toString().padStart(exponent + 1, '0');
  const body = exponent === 0 ? digits : `${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
  return negative ? `-${body}` : body;
}
