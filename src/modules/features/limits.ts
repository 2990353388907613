import type { Config } from '../../config.js';
import type { BusinessSettings, KycLimitTable } from '../../core/settings.js';
import { parseAmount } from '../../lib/money.js';
import type { KycLevel } from '../kyc/schema.js';

/**
 * Transaction limits per KYC level and currency, in major units. KYC_LIMITS (JSON, same shape)
 * replaces entries of these defaults, and a business's `kyc_limits` setting replaces entries of
 * that. The defaults are about USD 1,000 per transaction and 5,000 a day at `basic`, ten times
 * that at `intermediate`.
 */

const BASIC: Record<string, [string, string]> = {
  NGN: ['1500000', '7500000'],
  USD: ['1000', '5000'],
  EUR: ['1000', '5000'],
  GBP: ['800', '4000'],
  GHS: ['15000', '75000'],
  KES: ['130000', '650000'],
  UGX: ['3700000', '18500000'],
  ZAR: ['18000', '90000'],
  XOF: ['600000', '3000000'],
  XAF: ['600000', '3000000'],
  MXN: ['17000', '85000'],
};

function defaults(): KycLimitTable {
  const basic: KycLimitTable[string] = {};
  const intermediate: KycLimitTable[string] = {};
  for (const [ccy, [per, daily]] of Object.entries(BASIC)) {
    basic[ccy] = { per_transaction: per, daily };
    intermediate[ccy] = { per_transaction: `${per}0`, daily: `${daily}0` };
  }
  return { basic, intermediate };
}

function entry(table: KycLimitTable | undefined, level: string, currency: string) {
  return table?.[level]?.[currency];
}

const DEFAULTS = defaults();

export interface Limits {
  perTransaction: bigint;
  daily: bigint;
}

/** The limits in minor units, or undefined when none is configured for this level and currency. */
export function limitsFor(
  settings: BusinessSettings,
  level: KycLevel,
  currency: string,
  config: Pick<Config, 'KYC_LIMITS'>,
): Limits | undefined {
  const e = entry(settings.kyc_limits, level, currency) ?? entry(config.KYC_LIMITS, level, currency) ?? entry(DEFAULTS, level, currency);
  if (!e) return undefined;
  try {
    return { perTransaction: parseAmount(String(e.per_transaction), currency), daily: parseAmount(String(e.daily), currency) };
  } catch {
    return undefined; // an amount with more decimals than the currency has: refuses rather than allows
  }
}
