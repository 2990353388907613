import fc from 'fast-check';
import { isError } from '../../test/errors-helper.js';
import { describe, expect, it } from 'vitest';
import { parseJsonPreservingNumbers } from './json.js';
import { formatAmount, parseAmount } from './money.js';

describe('parseAmount', () => {
  it.each([
    ['100.5', 'USD', 10050n],
    ['100.50', 'USD', 10050n],
    [100.5, 'USD', 10050n],
    ['1500', 'UGX', 1500n],
    ['0.01', 'NGN', 1n],
    ['999999999999999', 'UGX', 999999999999999n],
    ['0000.10', 'USD', 10n],
  ])('parses %s %s', (input, currency, minor) => {
    expect(parseAmount(input, currency)).toBe(minor);
  });

  it.each([
    ['100.129999999999999999', 'USD'],
    ['100.123', 'USD'],
    ['1500.5', 'UGX'],
    ['0', 'USD'],
    ['0.00', 'USD'],
    ['-5', 'USD'],
    ['NaN', 'USD'],
    ['1e3', 'USD'],
    ['', 'USD'],
    ['1,000', 'USD'],
    ['1234567890123456', 'UGX'],
    [Number.NaN, 'USD'],
    [null, 'USD'],
    [true, 'USD'],
  ])('rejects %s %s with invalid_amount', (input, currency) => {
    let thrown: unknown;
    try {
      parseAmount(input, currency);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toSatisfy(isError('invalid_amount', 400));
  });

  it('judges a JSON number on its text, not the rounded double', () => {
    const body = parseJsonPreservingNumbers('{"amount": 100.129999999999999999, "ok": 100.5, "n": 3}') as Record<string, unknown>;
    expect(body.amount).toBe('100.129999999999999999');
    expect(() => parseAmount(body.amount, 'USD')).toThrow();
    expect(body.ok).toBe(100.5);
    expect(body.n).toBe(3);
  });

  it('round-trips every minor amount through its decimal string', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n - 1n }), fc.constantFrom('USD', 'UGX', 'KWD', 'NGN'), (minor, ccy) => {
        expect(parseAmount(formatAmount(minor, ccy), ccy)).toBe(minor);
      }),
    );
  });
});

describe('formatAmount', () => {
  it('always carries the currency exponent', () => {
    expect(formatAmount(10050n, 'USD')).toBe('100.50');
    expect(formatAmount(5n, 'USD')).toBe('0.05');
    expect(formatAmount(1500n, 'UGX')).toBe('1500');
    expect(formatAmount(-1n, 'KWD')).toBe('-0.001');
    expect(formatAmount(0n, 'EUR')).toBe('0.00');
  });
});
