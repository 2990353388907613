import { z } from 'zod';
import { parseAmount } from '../../lib/money.js';

/**
 * Fee settings per business (tenant settings, set by the operator CLI), per operation and
 * currency, e.g. `fees.internal_transfer = {"NGN": {"flat": "10.00", "bps": 50, "max": "1000.00"}}`.
 * `"*"` applies to currencies without their own entry. fee = flat + amount * bps / 10000
 * (rounded half up to the minor unit), capped by `min`/`max` when set. No entry: no fee.
 */
const FeeRule = z.strictObject({
  flat: z.union([z.string(), z.number()]).optional(),
  bps: z.number().int().min(0).max(10_000).optional(),
  min: z.union([z.string(), z.number()]).optional(),
  max: z.union([z.string(), z.number()]).optional(),
});
const FeeTable = z.record(z.string(), FeeRule);

export function computeFee(settings: Record<string, unknown>, operation: string, currency: string, amount: bigint): bigint {
  const fees = settings.fees as Record<string, unknown> | undefined;
  const raw = fees?.[operation];
  if (raw === undefined || raw === null) return 0n;
  const table = FeeTable.safeParse(raw);
  // An operator typo must not silently waive or invent fees: fail loudly (500, logged).
  if (!table.success) throw new Error(`invalid fee settings for ${operation}`);
  const rule = table.data[currency] ?? table.data['*'];
  if (!rule) return 0n;
  const minor = (v: string | number | undefined) => (v === undefined || v === 0 || v === '0' ? 0n : parseAmount(v, currency, 'fee'));
  let fee = minor(rule.flat) + (amount * BigInt(rule.bps ?? 0) + 5_000n) / 10_000n;
  if (rule.min !== undefined && fee < minor(rule.min)) fee = minor(rule.min);
  if (rule.max !== undefined && fee > minor(rule.max)) fee = minor(rule.max);
  return fee;
}
