import { describe, expect, it } from 'vitest';
import {
  abaCheckDigit,
  clabeCheckDigit,
  generateBankDetails,
  isValidAbaRouting,
  isValidBIC,
  isValidClabe,
  isValidIBAN,
  isValidNuban,
  nubanCheckDigit,
} from './bank-details.js';

describe('bank details', () => {
  it('computes NUBAN check digits (CBN example)', () => {
    // CBN's worked example: bank 011, serial 000001457 -> check digit 9.
    expect(nubanCheckDigit('011', '000001457')).toBe(9);
    expect(isValidNuban('0000014579', '011')).toBe(true);
    expect(isValidNuban('0000014578', '011')).toBe(false);
  });

  it('validates ABA routing numbers', () => {
    expect(isValidAbaRouting('021000021')).toBe(true); // JPMorgan Chase NY
    expect(isValidAbaRouting('011000015')).toBe(true); // Federal Reserve Boston
    expect(isValidAbaRouting('021000022')).toBe(false);
    expect(abaCheckDigit('02100002')).toBe(1);
  });

  it('validates CLABE', () => {
    expect(isValidClabe('032180000118359719')).toBe(true);
    expect(isValidClabe('032180000118359718')).toBe(false);
    expect(clabeCheckDigit('03218000011835971')).toBe(9);
  });

  it('generates valid details for every supported currency', () => {
    for (let i = 0; i < 50; i++) {
      const ngn = generateBankDetails('NGN', 'Acme');
      expect(isValidNuban(ngn.account_number, ngn.bank_code!)).toBe(true);
      const usd = generateBankDetails('USD', 'Acme');
      expect(isValidAbaRouting(usd.routing_number!)).toBe(true);
      expect(usd.account_number).toMatch(/^\d{12}$/);
      const eur = generateBankDetails('EUR', 'Acme');
      expect(eur.iban).toMatch(/^DE\d{20}$/);
      expect(isValidIBAN(eur.iban!)).toBe(true);
      expect(isValidBIC(eur.bic!)).toBe(true);
      const gbp = generateBankDetails('GBP', 'Acme');
      expect(gbp.iban).toMatch(/^GB\d{2}FSAP\d{14}$/);
      expect(isValidIBAN(gbp.iban!)).toBe(true);
      expect(gbp.sort_code).toMatch(/^\d{6}$/);
      expect(gbp.account_number).toMatch(/^\d{8}$/);
      const mxn = generateBankDetails('MXN', 'Acme');
      expect(isValidClabe(mxn.clabe!)).toBe(true);
      expect(isValidIBAN(generateBankDetails('XOF', 'Acme').iban!)).toBe(true);
      expect(isValidIBAN(generateBankDetails('XAF', 'Acme').iban!)).toBe(true);
    }
    expect(generateBankDetails('GHS', 'Acme').account_number).toMatch(/^\d{13}$/);
    expect(generateBankDetails('ZAR', 'Acme').branch_code).toBe('250655');
  });
});
