import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { limitsFor } from './limits.js';
import { transactionLimitRefusal } from './service.js';

describe('limitsFor: KYC limits per level and currency, in minor units', () => {
  it('has defaults for basic and ten times them for intermediate', () => {
    expect(limitsFor({}, 'basic', 'USD', {})).toEqual({ perTransaction: 1_000_00n, daily: 5_000_00n });
    expect(limitsFor({}, 'intermediate', 'USD', {})).toEqual({ perTransaction: 10_000_00n, daily: 50_000_00n });
    expect(limitsFor({}, 'basic', 'UGX', {})).toEqual({ perTransaction: 3_700_000n, daily: 18_500_000n });
  });

  it('lets the configuration replace a default, and a business setting replace both', () => {
    const config = { KYC_LIMITS: { basic: { USD: { per_transaction: '200', daily: '400' } } } };
    expect(limitsFor({}, 'basic', 'USD', config)).toEqual({ perTransaction: 200_00n, daily: 400_00n });
    expect(limitsFor({}, 'basic', 'EUR', config)).toEqual({ perTransaction: 1_000_00n, daily: 5_000_00n });
    const settings = { kyc_limits: { basic: { USD: { per_transaction: '50', daily: '60' } } } };
    expect(limitsFor(settings, 'basic', 'USD', config)).toEqual({ perTransaction: 50_00n, daily: 60_00n });
  });

  it('has no limit for a currency nobody configured, and refuses an amount finer than the currency', () => {
    expect(limitsFor({}, 'basic', 'CHF', {})).toBeUndefined();
    const settings = { kyc_limits: { basic: { UGX: { per_transaction: '10.5', daily: '100' } } } };
    expect(limitsFor(settings, 'basic', 'UGX', {})).toBeUndefined();
  });
});

describe('transactionLimitRefusal: the per-transaction and daily limits of a movement', () => {
  const ctx = { tenantId: 't', environment: 'sandbox' as const, settings: {} };
  const config = loadConfig({});
  const refusal = (level: 'basic' | undefined, amount: bigint, spent: bigint, currency = 'USD') =>
    transactionLimitRefusal(ctx, level, currency, amount, spent, config);

  it('lets a movement within both limits through, up to the limits themselves', () => {
    expect(refusal('basic', 1_000_00n, 0n)).toBeUndefined();
    expect(refusal('basic', 1_000_00n, 4_000_00n)).toBeUndefined();
  });

  it('refuses above the per-transaction limit, then above the daily total', () => {
    expect(refusal('basic', 1_000_01n, 0n)?.details).toEqual([expect.objectContaining({ field: 'amount', code: 'per_transaction_limit' })]);
    expect(refusal('basic', 1_00n, 4_999_01n)?.details).toEqual([expect.objectContaining({ field: 'amount', code: 'daily_limit' })]);
    expect(refusal('basic', 1_00n, 4_999_01n)?.code).toBe('limit_exceeded');
  });

  it('refuses without approved KYC, and where no limit is configured', () => {
    expect(refusal(undefined, 1n, 0n)?.code).toBe('kyc_level_insufficient');
    expect(refusal('basic', 1n, 0n, 'CHF')?.details).toEqual([expect.objectContaining({ code: 'no_limit_configured' })]);
  });
});
