import type { Config } from '../../config.js';
import type { BusinessSettings, FeeTable } from '../../core/settings.js';
import { parseAmount } from '../../lib/money.js';

/**
 * Every price a business charges, in one place: fees on transfers, payouts and collections
 * (fee tables) and the FX spread and fee.
 *
 * Fee settings per business (tenant settings, set by the operator CLI), per operation and
 * currency, e.g. `fees.internal_transfer = {"NGN": {"flat": "10.00", "bps": 50, "max": "1000.00"}}`.
 * `"*"` applies to currencies without their own entry. fee = flat + amount * bps / 10000
 * (rounded half up to the minor unit), capped by `min`/`max` when set. No entry: no fee.
 */
export function computeFee(settings: Pick<BusinessSettings, 'fees'>, operation: string, currency: string, amount: bigint): bigint {
  return feeOf(settings.fees?.[operation], currency, amount);
}

/** The fee of one table's rule for this currency (none: 0). The table was checked when loaded. */
export function feeOf(table: FeeTable | undefined, currency: string, amount: bigint): bigint {
  const rule = table?.[currency] ?? table?.['*'];
  if (!rule) return 0n;
  const minor = (v: string | number | undefined) => (v === undefined || v === 0 || v === '0' ? 0n : parseAmount(v, currency, 'fee'));
  let fee = minor(rule.flat) + (amount * BigInt(rule.bps ?? 0) + 5_000n) / 10_000n;
  if (rule.min !== undefined && fee < minor(rule.min)) fee = minor(rule.min);
  if (rule.max !== undefined && fee > minor(rule.max)) fee = minor(rule.max);
  return fee;
}

/** The business's FX spread and fee in basis points: its settings (parsed with the key) win over the configuration. */
export function fxPricing(
  settings: Pick<BusinessSettings, 'fx_spread_bps' | 'fx_fee_bps'> | undefined,
  config: Pick<Config, 'FX_SPREAD_BPS' | 'FX_FEE_BPS'>,
): { spreadBps: number; feeBps: number } {
  return { spreadBps: settings?.fx_spread_bps ?? config.FX_SPREAD_BPS, feeBps: settings?.fx_fee_bps ?? config.FX_FEE_BPS };
}

/** The customer's FX rate from the mid rate and spread, and the FX fee: the arithmetic of lib/decimal.ts. */
export { customerRate as fxCustomerRate, feeFor as fxFee } from '../../lib/decimal.js';
