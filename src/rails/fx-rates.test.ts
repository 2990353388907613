import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applySpread, convertMinor, parseDecimal, SandboxFxRates } from './fx-rates.js';

describe('sandbox FX rates', () => {
  it('serves configured rates and crosses them through USD', async () => {
    const fx = new SandboxFxRates({ NGN: '1500', GHS: '15' });
    expect(await fx.midRate('USD', 'NGN')).toBe('1500');
    expect(await fx.midRate('GHS', 'NGN')).toBe('100');
    expect(await fx.midRate('NGN', 'USD')).toBe('0.0006666666');
    expect(await fx.midRate('USD', 'XYZ')).toBeUndefined();
  });
  it('takes the spread off the mid rate', () => {
    expect(applySpread('1500', 50)).toBe('1492.5');
    expect(applySpread('15.5', 50)).toBe('15.4225');
    expect(applySpread('1500', 0)).toBe('1500');
  });
});

describe('convertMinor', () => {
  it('handles exponents: USD cents to UGX shillings and back', () => {
    expect(convertMinor(10001n, '3700', 2, 0)).toBe(370037n);
    // 370037 * 0.00027027 = 100.00989... USD: rounded down, the remainder stays in the FX position
    expect(convertMinor(370037n, '0.00027027', 0, 2)).toBe(10000n);
  });
  it('never pays out more than the exact product, and loses less than one minor unit', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 10n ** 15n }),
        fc.stringMatching(/^[1-9]\d{0,5}(\.\d{1,8})?$/),
        fc.constantFrom(0, 2, 3),
        fc.constantFrom(0, 2, 3),
        (amount, rate, fromExp, toExp) => {
          const out = convertMinor(amount, rate, fromExp, toExp);
          const r = parseDecimal(rate);
          // exact value scaled: amount * r.num * 10^toExp / 10^(r.scale + fromExp)
          const exactNumerator = amount * r.num * 10n ** BigInt(toExp);
          const denominator = 10n ** BigInt(r.scale + fromExp);
          expect(out * denominator <= exactNumerator).toBe(true);
          expect((out + 1n) * denominator > exactNumerator).toBe(true);
        },
      ),
    );
  });
});
