import { electronicFormatIBAN, isSEPACountry, isValidBIC as ibantoolsBic, isValidIBAN } from 'ibantools';
import { parsePhoneNumberFromString } from 'libphonenumber-js/max';

/**
 * Pure checks of payee bank details. Each answers true/false (or a reason) and never throws, so
 * the schemas can report every invalid field at once.
 */

/** IBAN in electronic form (no spaces, upper case), or undefined when it is not a valid IBAN. */
export function normalizeIban(input: string): string | undefined {
  const iban = electronicFormatIBAN(input) ?? '';
  return isValidIBAN(iban) ? iban : undefined;
}

/** Whether the IBAN's country takes part in SEPA (a SEPA payee needs one). */
export function isSepaIban(iban: string): boolean {
  return isSEPACountry(iban.slice(0, 2));
}

/**
 * ABA routing number: 9 digits whose weighted sum 3-7-1 is a multiple of 10, and whose first
 * two digits are a Federal Reserve district (00-12, 21-32, 61-72, 80 traveler's checks).
 */
export function isValidAbaRouting(routing: string): boolean {
  if (!/^\d{9}$/.test(routing)) return false;
  const d = [...routing].map(Number);
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!);
  if (sum % 10 !== 0) return false;
  const prefix = Number(routing.slice(0, 2));
  return prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;
}

/** BIC (SWIFT code): 4 letters bank, 2 letters country, 2 location, optional 3 branch. */
export function isValidBic(bic: string): boolean {
  return /^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$/.test(bic) && ibantoolsBic(bic);
}

/** UK Faster Payments: 8-digit account number and 6-digit sort code (dashes/spaces allowed). */
export function normalizeSortCode(input: string): string | undefined {
  const compact = input.replace(/[-\s]/g, '');
  return /^\d{6}$/.test(compact) ? compact : undefined;
}

export function isValidFpsAccountNumber(accountNumber: string): boolean {
  return /^\d{8}$/.test(accountNumber);
}

const NUBAN_WEIGHTS = [3, 7, 3];

/**
 * The NUBAN check digit (CBN standard) of a 9-digit serial at a bank. Commercial banks have a
 * 3-digit CBN code; other institutions a 5-digit code prefixed with 9 (or a 6-digit code), and
 * the revised standard then weighs all 15 digits with the same 3-7-3 pattern.
 */
export function nubanCheckDigit(bankCode: string, serial: string): number | undefined {
  if (!/^\d{9}$/.test(serial)) return undefined;
  let code: string;
  if (/^\d{3}$/.test(bankCode) || /^\d{6}$/.test(bankCode)) code = bankCode;
  else if (/^\d{5}$/.test(bankCode)) code = `9${bankCode}`;
  else return undefined;
  const digits = [...(code + serial)].map(Number);
  const sum = digits.reduce((acc, digit, i) => acc + digit * NUBAN_WEIGHTS[i % 3]!, 0);
  return (10 - (sum % 10)) % 10;
}

/** Whether a 10-digit Nigerian account number is a valid NUBAN at the bank with this CBN code. */
export function isValidNuban(bankCode: string, accountNumber: string): boolean {
  if (!/^\d{10}$/.test(accountNumber)) return false;
  return nubanCheckDigit(bankCode, accountNumber.slice(0, 9)) === Number(accountNumber[9]);
}

export type MobileNumberCheck = { ok: true; e164: string } | { ok: false; reason: string };

/**
 * A mobile money wallet number: a valid mobile number of `country`, whose national number starts
 * with one of the operator's prefixes (the operator's own number ranges).
 */
export function checkMobileMoneyNumber(phone: string, country: string, operatorPrefixes: readonly string[]): MobileNumberCheck {
  if (!/^\+[1-9]\d{6,14}$/.test(phone)) return { ok: false, reason: 'Must be in E.164 format with a leading + (e.g. +233241234567)' };
  const parsed = parsePhoneNumberFromString(phone);
  if (!parsed || !parsed.isValid()) return { ok: false, reason: 'Not a valid phone number' };
  if (parsed.country !== country) return { ok: false, reason: `Must be a ${country} phone number` };
  const type = parsed.getType();
  if (type !== undefined && type !== 'MOBILE' && type !== 'FIXED_LINE_OR_MOBILE') {
    return { ok: false, reason: 'Must be a mobile number' };
  }
  const national = String(parsed.nationalNumber);
  if (operatorPrefixes.length > 0 && !operatorPrefixes.some((p) => national.startsWith(p))) {
    return { ok: false, reason: 'The number does not belong to this mobile money operator' };
  }
  return { ok: true, e164: parsed.number };
}
