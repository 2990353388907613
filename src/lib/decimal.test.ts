import { describe, expect, it } from 'vitest';
import { convert, crossRate, customerRate, feeFor, formatRate, invertRate, parseRate, rateFromDb } from './decimal.js';

describe('FX rate arithmetic', () => {
  it('parses and formats rates without floats', () => {
    expect(parseRate('1600.5')).toBe(1_600_500_000_000_000n);
    expect(parseRate(17.5)).toBe(parseRate('17.50'));
    expect(formatRate(parseRate('0.000625'))).toBe('0.000625');
    expect(formatRate(parseRate('16'))).toBe('16.00');
    expect(formatRate(rateFromDb('1550.000000000000'))).toBe('1550.00');
    for (const bad of ['0', '-1', '1e3', 'abc', '1.0000000000001', '1234567890', '', 5]) {
      if (bad === 5) continue;
      expect(() => parseRate(bad)).toThrow();
    }
  });

  it('derives cross and inverse rates half-up', () => {
    expect(formatRate(crossRate(parseRate('1'), parseRate('1550')))).toBe('1550.00');
    expect(formatRate(crossRate(parseRate('1550'), parseRate('1')))).toBe('0.00064516129');
    expect(formatRate(invertRate(parseRate('3')))).toBe('0.333333333333');
    expect(formatRate(invertRate(parseRate('1.5')))).toBe('0.666666666667');
  });

  it('applies the spread in favour of the house', () => {
    const mid = parseRate('1.000000000001');
    expect(customerRate(mid, 50, 'sell')).toBe(parseRate('0.995000000000'));
    expect(customerRate(mid, 50, 'buy')).toBe(parseRate('1.005000000002'));
    expect(customerRate(mid, 0, 'sell')).toBe(mid);
  });

  it('converts exactly and rounds once: received down, paid up', () => {
    // 10.00 USD at 1549.999 NGN/USD = 15499.99 NGN exactly
    expect(convert(1000n, 'USD', 'NGN', parseRate('1549.999'), 'down')).toBe(1_549_999n);
    // 1 NGN kobo-level: 0.01 NGN at 0.000645 USD/NGN = 0.00000645 USD: nothing received, 1 cent paid
    expect(convert(1n, 'NGN', 'USD', parseRate('0.000645'), 'down')).toBe(0n);
    expect(convert(1n, 'NGN', 'USD', parseRate('0.000645'), 'up')).toBe(1n);
    // UGX has no minor unit: 1.00 USD at 3700.5 = 3700.5 UGX -> 3700 received, 3701 paid
    expect(convert(100n, 'USD', 'UGX', parseRate('3700.5'), 'down')).toBe(3700n);
    expect(convert(100n, 'USD', 'UGX', parseRate('3700.5'), 'up')).toBe(3701n);
    expect(convert(3700n, 'UGX', 'USD', parseRate('0.00027027'), 'down')).toBe(99n);
  });

  it('charges fees rounded up, none at 0 bps', () => {
    expect(feeFor(1000n, 0)).toBe(0n);
    expect(feeFor(1000n, 25)).toBe(3n);
    expect(feeFor(10000n, 25)).toBe(25n);
  });
});
