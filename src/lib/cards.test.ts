import { describe, expect, it } from 'vitest';
import { cardBrand, expiringSoon, isCvv, luhnValid, parseExpiry } from './cards.js';

describe('card rules', () => {
  it('checks Luhn for the contract magic numbers and rejects a changed digit', () => {
    for (const pan of ['4242424242424242', '4000000000000002', '4000000000009995', '5555555555554444', '378282246310005'])
      expect(luhnValid(pan), pan).toBe(true);
    expect(luhnValid('4242424242424241')).toBe(false);
    expect(luhnValid('42424242')).toBe(false);
  });
  it('names brands', () => {
    expect(cardBrand('4242424242424242')).toBe('visa');
    expect(cardBrand('5555555555554444')).toBe('mastercard');
    expect(cardBrand('2223003122003222')).toBe('mastercard');
    expect(cardBrand('378282246310005')).toBe('amex');
    expect(cardBrand('6011111111111117')).toBe('discover');
    expect(cardBrand('3566002020360505')).toBe('jcb');
  });
  it('parses expiry and refuses the past', () => {
    const now = new Date('2026-05-15T00:00:00Z');
    expect(parseExpiry('05/26', now)).toEqual({ month: '05', year: '2026' });
    expect(parseExpiry('04/26', now)).toBeUndefined();
    expect(parseExpiry('13/30', now)).toBeUndefined();
    expect(parseExpiry('12/2030', now)).toEqual({ month: '12', year: '2030' });
    expect(expiringSoon('06', '2026', now)).toBe(true);
    expect(expiringSoon('12', '2030', now)).toBe(false);
    expect(isCvv('123')).toBe(true);
    expect(isCvv('12a')).toBe(false);
  });
});
