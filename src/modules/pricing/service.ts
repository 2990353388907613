import type { BusinessSettings, FeeTable } from '../../core/settings.js';
import { parseAmount } from '../../lib/money.js';

/**
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
