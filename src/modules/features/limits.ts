import type { Config } from '../../config.js';
import { parseAmount } from '../../lib/money.js';
import type { KycLevel } from '../kyc/schema.js';

/**
 * Transaction limits per KYC level and currency, in major units. KYC_LIMITS (JSON, same shape)
 * replaces entries of these defaults, and a business's `kyc_limits` setting replaces entries of
 * that. The defaults are about USD 1,000 per transaction and 5,000 a day at `basic`, ten times
 * that at `intermediate`.
 */
type LimitTable = Record<string, Record<string, { per_transaction: string; daily: string }>>;

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

function defaults(): LimitTable {
  const basic: LimitTable[string] = {};
  const intermediate: LimitTable[string] = {};
  for (const [ccy, [per, daily]] of Object.entries(BASIC)) {
    basic[ccy] = { per_transaction: per, daily };
    intermediate[ccy] = { per_transaction: `${per}0`, daily: `${daily}0` };
  }
  return { basic, intermediate };
}

function entry(table: unknown, level: string, currency: string): { per_transaction: unknown; daily: unknown } | undefined {
  const byLevel = (table as LimitTable | undefined)?.[level];
  const e = byLevel && typeof byLevel === 'object' ? byLevel[currency] : undefined;
  return e && typeof e === 'object' ? e : undefined;
}

export interface Limits {
  perTransaction: bigint;
  daily: bigint;
}

/** The limits in minor units, or undefined when none is configured for this level and currency. */
export function limitsFor(config: Config, settings: Record<string, unknown>, level: KycLevel, currency: string): Limits | undefined {
  const configured = config.KYC_LIMITS ? (JSON.parse(config.KYC_LIMITS) as unknown) : undefined;
  const e = entry(settings.kyc_limits, level, currency) ?? entry(configured, level, currency) ?? entry(defaults(), level, currency);
  if (!e) return undefined;
  try {
    return { perTransaction: parseAmount(String(e.per_transaction), currency), daily: parseAmount(String(e.daily), currency) };
  } catch {
    return undefined; // a malformed setting refuses rather than allows
  }
}
