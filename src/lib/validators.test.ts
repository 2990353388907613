import { describe, expect, it } from 'vitest';
import { checkMobileMoneyNumber } from './payee-validation.js';
import { Phone } from './validators.js';

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
