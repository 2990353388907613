import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { allInstitutions, findInstitution, listInstitutions } from './institutions.js';
import {
  checkMobileMoneyNumber,
  isSepaIban,
  isValidAbaRouting,
  isValidBic,
  isValidFpsAccountNumber,
  isValidNuban,
  normalizeIban,
  normalizeSortCode,
  nubanCheckDigit,
} from './payee-validation.js';

describe('IBAN', () => {
  it('accepts valid IBANs in any spacing and case, rejects a wrong checksum', () => {
    expect(normalizeIban('DE89 3704 0044 0532 0130 00')).toBe('DE89370400440532013000');
    expect(normalizeIban('gb33bukb20201555555555')).toBe('GB33BUKB20201555555555');
    expect(normalizeIban('DE89370400440532013001')).toBeUndefined();
    expect(normalizeIban('XX00')).toBeUndefined();
    expect(isSepaIban('DE89370400440532013000')).toBe(true);
    expect(isSepaIban('BR1500000000000010932840814P2')).toBe(false);
  });
});

describe('ABA routing number', () => {
  it('accepts the real routing numbers of the data file', () => {
    for (const i of allInstitutions().filter((x) => x.country === 'US')) expect(isValidAbaRouting(i.code), i.name).toBe(true);
  });
  it('rejects a wrong checksum, a bad length and an impossible district', () => {
    expect(isValidAbaRouting('021000022')).toBe(false);
    expect(isValidAbaRouting('02100002')).toBe(false);
    expect(isValidAbaRouting('abcdefghi')).toBe(false);
    expect(isValidAbaRouting('500000000')).toBe(false);
  });
  it('detects every single-digit change', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 9 }), (pos, delta) => {
        const digits = [...'021000021'].map(Number);
        digits[pos] = (digits[pos]! + delta) % 10;
        expect(isValidAbaRouting(digits.join(''))).toBe(false);
      }),
    );
  });
});

describe('BIC', () => {
  it('accepts 8 and 11 character BICs and rejects other shapes', () => {
    expect(isValidBic('DEUTDEFF')).toBe(true);
    expect(isValidBic('DEUTDEFF500')).toBe(true);
    expect(isValidBic('NG2893A')).toBe(false);
    expect(isValidBic('deutdeff')).toBe(false);
    expect(isValidBic('DEUT1EFF')).toBe(false);
    expect(isValidBic('DEUTXXFF')).toBe(false);
  });
});

describe('NUBAN', () => {
  it('computes the CBN check digit for 3-digit bank codes', () => {
    // 058 + 152052565: 0*3+5*7+8*3 + 1*3+5*7+2*3 + 0*3+5*7+2*3 + 5*3+6*7+5*3 = 256 -> check 4
    expect(nubanCheckDigit('058', '152052565')).toBe(4);
    expect(isValidNuban('058', '1520525654')).toBe(true);
    expect(isValidNuban('058', '1520525655')).toBe(false);
    expect(isValidNuban('044', '1520525654')).toBe(false);
  });
  it('handles 5-digit (9-prefixed) and 6-digit institution codes', () => {
    expect(nubanCheckDigit('50211', '000000001')).toBe(nubanCheckDigit('950211', '000000001'));
    expect(nubanCheckDigit('1234', '000000001')).toBeUndefined();
  });
  it('every serial has exactly one valid check digit', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^\d{9}$/), (serial) => {
        const valid = [...'0123456789'].filter((d) => isValidNuban('057', serial + d));
        expect(valid).toHaveLength(1);
      }),
    );
  });
});

describe('FPS', () => {
  it('needs an 8-digit account number and a 6-digit sort code', () => {
    expect(isValidFpsAccountNumber('12345678')).toBe(true);
    expect(isValidFpsAccountNumber('1234567')).toBe(false);
    expect(normalizeSortCode('20-00-00')).toBe('200000');
    expect(normalizeSortCode('2000000')).toBeUndefined();
  });
});

describe('mobile money numbers', () => {
  const mtnGh = listInstitutions({ country: 'GH', type: 'mobile_money' }).find((i) => i.code === 'MTN')!;
  const telecel = listInstitutions({ country: 'GH', type: 'mobile_money' }).find((i) => i.code === 'TELECEL')!;
  it('accepts a number of the operator in its country', () => {
    expect(checkMobileMoneyNumber('+233241234567', 'GH', mtnGh.prefixes)).toEqual({ ok: true, e164: '+233241234567' });
  });
  it('rejects another operator, another country, a landline and a bad format', () => {
    expect(checkMobileMoneyNumber('+233241234567', 'GH', telecel.prefixes).ok).toBe(false);
    expect(checkMobileMoneyNumber('+254712345678', 'GH', mtnGh.prefixes).ok).toBe(false);
    expect(checkMobileMoneyNumber('+233302123456', 'GH', []).ok).toBe(false);
    expect(checkMobileMoneyNumber('0241234567', 'GH', mtnGh.prefixes).ok).toBe(false);
  });
  it('knows M-Pesa and Airtel Kenya apart', () => {
    const ke = listInstitutions({ country: 'KE', type: 'mobile_money' });
    const mpesa = ke.find((i) => i.code === 'MPESA')!;
    const airtel = ke.find((i) => i.code === 'AIRTEL')!;
    expect(checkMobileMoneyNumber('+254712345678', 'KE', mpesa.prefixes).ok).toBe(true);
    expect(checkMobileMoneyNumber('+254712345678', 'KE', airtel.prefixes).ok).toBe(false);
    expect(checkMobileMoneyNumber('+254733123456', 'KE', airtel.prefixes).ok).toBe(true);
  });
});

describe('institutions data', () => {
  it('covers the required countries with stable unique ids', () => {
    for (const c of ['NG', 'GH', 'KE', 'UG', 'ZA', 'US', 'GB', 'DE', 'FR']) {
      expect(listInstitutions({ country: c }).length, c).toBeGreaterThan(0);
    }
    for (const c of ['NG', 'GH', 'KE', 'UG']) expect(listInstitutions({ country: c, type: 'mobile_money' }).length, c).toBeGreaterThan(0);
    const ids = allInstitutions().map((i) => i.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(findInstitution(ids[0]!)?.id).toBe(ids[0]);
    expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
  it('has valid bank codes where a checksum exists', () => {
    for (const i of listInstitutions({ country: 'NG', type: 'bank' })) expect(i.code, i.name).toMatch(/^\d{3}$|^\d{5,6}$/);
    for (const i of allInstitutions().filter((x) => /^[A-Z]{8}$/.test(x.code))) expect(isValidBic(i.code), i.name).toBe(true);
    for (const i of listInstitutions({ country: 'GB' })) expect(normalizeSortCode(i.code), i.name).toBeDefined();
  });
});
