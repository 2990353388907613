import { describe, expect, it } from 'vitest';
import { computeFee, feeOf, fxPricing } from './service.js';

describe('feeOf: flat + amount × bps / 10000, half up to the minor unit, within min and max', () => {
  it('adds the flat part and the basis points', () => {
    // 10.00 + 1,000.00 × 50 bps = 10.00 + 5.00
    expect(feeOf({ NGN: { flat: '10.00', bps: 50 } }, 'NGN', 100_000n)).toBe(1_500n);
  });

  it('rounds the basis points half up to the minor unit', () => {
    // 1.01 × 50 bps = 0.00505 → 0.01; 0.99 × 50 bps = 0.00495 → 0.00
    expect(feeOf({ USD: { bps: 50 } }, 'USD', 101n)).toBe(1n);
    expect(feeOf({ USD: { bps: 50 } }, 'USD', 99n)).toBe(0n);
  });

  it('reads amounts in the currency exponent (UGX has none)', () => {
    expect(feeOf({ UGX: { flat: '500', bps: 100 } }, 'UGX', 10_000n)).toBe(600n);
  });

  it('keeps the fee within min and max', () => {
    const table = { NGN: { bps: 100, min: '50.00', max: '1000.00' } };
    expect(feeOf(table, 'NGN', 100_00n)).toBe(50_00n); // 1 % of 100.00 = 1.00, raised to the minimum
    expect(feeOf(table, 'NGN', 1_000_000_00n)).toBe(1_000_00n); // 1 % of 1,000,000.00, capped
    expect(feeOf(table, 'NGN', 20_000_00n)).toBe(200_00n); // inside both
  });

  it('uses "*" for a currency without its own rule, and charges nothing without either', () => {
    const table = { NGN: { flat: '10.00' }, '*': { bps: 25 } };
    expect(feeOf(table, 'USD', 100_00n)).toBe(25n);
    expect(feeOf(table, 'NGN', 100_00n)).toBe(10_00n);
    expect(feeOf({ NGN: { flat: '10.00' } }, 'USD', 100_00n)).toBe(0n);
    expect(feeOf(undefined, 'USD', 100_00n)).toBe(0n);
  });
});

describe('computeFee', () => {
  it('takes the rule of the operation from the business settings', () => {
    const settings = { fees: { internal_transfer: { '*': { flat: '1.00' } } } };
    expect(computeFee(settings, 'internal_transfer', 'EUR', 50_00n)).toBe(1_00n);
    expect(computeFee(settings, 'card_funding', 'EUR', 50_00n)).toBe(0n);
    expect(computeFee({}, 'internal_transfer', 'EUR', 50_00n)).toBe(0n);
  });
});

describe('fxPricing', () => {
  it('lets the business settings win over the configuration, field by field', () => {
    const config = { FX_SPREAD_BPS: 50, FX_FEE_BPS: 0 };
    expect(fxPricing(undefined, config)).toEqual({ spreadBps: 50, feeBps: 0 });
    expect(fxPricing({ fx_spread_bps: 20 }, config)).toEqual({ spreadBps: 20, feeBps: 0 });
    expect(fxPricing({ fx_spread_bps: 0, fx_fee_bps: 10 }, config)).toEqual({ spreadBps: 0, feeBps: 10 });
  });
});
