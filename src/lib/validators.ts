import { isPossiblePhoneNumber } from 'libphonenumber-js/max';
import { z } from 'zod';
import { isCountry, isStateOf } from './countries.js';
import { isKnownCurrency } from './money.js';

/** Shared field rules: one definition of a valid email, phone, date, country and address. */

export const Email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ message: 'Must be a valid email address' }));

/**
 * A customer's phone: E.164 with a leading + and a *possible* number (a known country code and a
 * length that country's numbers can have), as the reference's own examples (+15555550101) are.
 * Mobile-money payees are stricter: their number must fall in the operator's ranges
 * (`checkMobileMoneyNumber`), because money is sent to it.
 */
export const Phone = z
  .string()
  .trim()
  .refine((s) => /^\+[1-9]\d{6,14}$/.test(s) && isPossiblePhoneNumber(s), {
    message: 'Must be a phone number in E.164 format with a leading + and a country code (e.g. +2348012345678)',
  });

export const CountryCode = z.string().refine(isCountry, { message: 'Must be an ISO 3166-1 alpha-2 country code (e.g. NG)' });

export const CurrencyCode = z
  .string()
  .refine((c) => /^[A-Z]{3}$/.test(c) && isKnownCurrency(c), { message: 'Must be a supported ISO 4217 currency code' });

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A real calendar date `YYYY-MM-DD` (no 2023-02-30). */
export function isCalendarDate(s: string): boolean {
  const m = DATE_RE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.toISOString().slice(0, 10) === s;
}

export const PastDate = z
  .string()
  .refine(isCalendarDate, { message: 'Must be a real date in YYYY-MM-DD format' })
  .refine((s) => !isCalendarDate(s) || s <= new Date().toISOString().slice(0, 10), {
    message: 'Must not be in the future',
  })
  .refine((s) => !isCalendarDate(s) || s >= '1900-01-01', { message: 'Must be after 1900-01-01' });

const Text = (max: number) => z.string().trim().min(1, 'Must not be empty').max(max);
export const NameText = Text(100);
export const ShortText = Text(255);

export const Address = z
  .strictObject({
    address_line1: Text(200),
    address_line2: z.string().trim().max(200).optional(),
    city: Text(100),
    postal_code: Text(20),
    state: z.string().trim(),
    country: CountryCode,
  })
  .superRefine((a, ctx) => {
    if (typeof a.state !== 'string' || typeof a.country !== 'string' || !isCountry(a.country)) return;
    if (!isStateOf(a.state, a.country)) {
      ctx.addIssue({
        code: 'custom',
        path: ['state'],
        message: `Must be an ISO 3166-2 subdivision of ${a.country} (e.g. ${a.country}-…)`,
      });
    }
  })
  .meta({ id: 'Address' });
export type Address = z.infer<typeof Address>;

export const Gender = z.enum(['male', 'female', 'other']);

export const UuidParam = z.string().uuid({ message: 'Must be a UUID' });
