import { describe, expect, it } from 'vitest';
import { checkMobileMoneyNumber } from './payee-validation.js';
import { isAlpha3Country, isCountry, isStateOf } from './countries.js';
import { Address, CountryCode, CurrencyCode, isCalendarDate, PastDate, Phone } from './validators.js';

describe('customer phone numbers', () => {
  it('accepts a possible E.164 number, as the reference examples are (docs/api-rules.md#reference-examples)', () => {
    for (const phone of ['+15555550101', '+12025550173', '+15555550199', '+2348012345678', '+447911123456']) {
      expect(Phone.safeParse(phone).success, phone).toBe(true);
    }
  });

  it('refuses numbers without +, with an unknown country code, or of an impossible length', () => {
    for (const phone of ['15555550101', '+1555', '+999123456789', '+1555555010199999', '+234801', 'tel:+15555550101']) {
      expect(Phone.safeParse(phone).success, phone).toBe(false);
    }
  });

  it('leaves mobile money payees to the stricter operator-range check', () => {
    // Possible (so a customer may have it) but not a Ghanaian mobile number in MTN's ranges.
    expect(Phone.safeParse('+233301234567').success).toBe(true);
    expect(checkMobileMoneyNumber('+233301234567', 'GH', ['24', '54', '55', '59']).ok).toBe(false);
  });
});

describe('ISO 3166 countries and subdivisions', () => {
  it('knows alpha-2 and alpha-3 country codes, in capitals only', () => {
    for (const code of ['NG', 'US', 'GB', 'KE']) expect(isCountry(code), code).toBe(true);
    for (const code of ['ng', 'XX', 'NGA', 'N', '']) expect(isCountry(code), code).toBe(false);
    expect(isAlpha3Country('NGA')).toBe(true);
    expect(isAlpha3Country('NG')).toBe(false);
    expect(CountryCode.safeParse('NG').success).toBe(true);
    expect(CountryCode.safeParse('Nigeria').success).toBe(false);
  });

  it('accepts a state only as a subdivision of its own country', () => {
    expect(isStateOf('NG-LA', 'NG')).toBe(true);
    expect(isStateOf('US-NY', 'US')).toBe(true);
    expect(isStateOf('NY', 'US')).toBe(false);
    expect(isStateOf('US-NY', 'NG')).toBe(false);
  });

  it('names the state field when an address mixes countries', () => {
    const address = { address_line1: '12 Marina Road', city: 'Lagos', postal_code: '101001', state: 'NG-LA', country: 'NG' };
    expect(Address.safeParse(address).success).toBe(true);
    const wrong = Address.safeParse({ ...address, country: 'GH' });
    expect(wrong.success).toBe(false);
    expect(wrong.error?.issues.map((i) => i.path.join('.'))).toEqual(['state']);
  });
});

describe('ISO 4217 currencies', () => {
  it('accepts supported three-letter codes only', () => {
    for (const code of ['NGN', 'USD', 'UGX']) expect(CurrencyCode.safeParse(code).success, code).toBe(true);
    for (const code of ['usd', 'US', 'USDT', 'XYZ']) expect(CurrencyCode.safeParse(code).success, code).toBe(false);
  });
});

describe('calendar dates (YYYY-MM-DD)', () => {
  it('accepts real dates only', () => {
    for (const date of ['1990-01-15', '2024-02-29', '2000-12-31']) expect(isCalendarDate(date), date).toBe(true);
    for (const date of ['2023-02-29', '2023-02-30', '2023-13-01', '1990-1-15', '15/01/1990', '1990-01-15T00:00:00Z']) {
      expect(isCalendarDate(date), date).toBe(false);
    }
  });

  it('refuses dates of birth in the future or before 1900', () => {
    expect(PastDate.safeParse('1990-01-15').success).toBe(true);
    expect(PastDate.safeParse('2999-01-01').success).toBe(false);
    expect(PastDate.safeParse('1899-12-31').success).toBe(false);
  });
});
