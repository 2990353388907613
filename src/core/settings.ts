import { z } from 'zod';

/**
 * The shapes of pricing and limit tables, shared by a business's settings and the configuration
 * defaults (PAYOUT_FEES, PAYOUT_LIMITS, KYC_LIMITS), and the business settings themselves: one
 * schema, parsed once when a business is loaded (with its API key), so every reader gets typed
 * values and no reader casts.
 */

/** An amount in major units: a decimal string ("1000.50") or a plain number. */
export const AmountText = z.union([
  z.string().regex(/^\d{1,20}(\.\d{1,8})?$/, 'Must be a decimal amount in major units, such as "100.00"'),
  z.number().nonnegative().finite(),
]);

/** A fee: flat + amount × bps / 10000, rounded half up to the minor unit, within min and max. */
export const FeeRule = z.strictObject({
  flat: AmountText.optional(),
  bps: z.number().int().min(0).max(10_000).optional(),
  min: AmountText.optional(),
  max: AmountText.optional(),
});
export type FeeRule = z.infer<typeof FeeRule>;

/** Fee rules by currency (`"*"`: every currency without its own entry). */
export const FeeTable = z.record(z.string(), FeeRule);
export type FeeTable = z.infer<typeof FeeTable>;

/** Fee tables by rail (`"*"`: every rail without its own), e.g. PAYOUT_FEES. */
export const RailFeeTable = z.record(z.string(), FeeTable);
export type RailFeeTable = z.infer<typeof RailFeeTable>;

/** Largest single amount by rail and currency (`"*"` for either), e.g. PAYOUT_LIMITS. */
export const RailLimitTable = z.record(z.string(), z.record(z.string(), AmountText));
export type RailLimitTable = z.infer<typeof RailLimitTable>;

/** Transaction limits by KYC level and currency, e.g. KYC_LIMITS. */
export const KycLimitTable = z.record(z.string(), z.record(z.string(), z.strictObject({ per_transaction: AmountText, daily: AmountText })));
export type KycLimitTable = z.infer<typeof KycLimitTable>;

const Bps = z.number().int().min(0).max(5000);

/**
 * A business's settings (tenants.settings), each overriding a configuration default. Set by the
 * operator CLI (`tenant settings`) or the dashboard (request log retention); checked on write
 * with the strict variant, so a misspelt key or a bad value is refused there.
 */
export const BusinessSettings = z.object({
  /** Fee tables by operation: internal_transfer, card_funding, payout_<rail>, collection_<method>. */
  fees: z.record(z.string(), FeeTable).optional(),
  /** Largest payout per rail and currency. */
  payout_limits: RailLimitTable.optional(),
  /** Transaction limits per KYC level and currency (entries replace the defaults'). */
  kyc_limits: KycLimitTable.optional(),
  /** Currencies held without a `<ccy>_account` feature. */
  home_currencies: z.array(z.string().regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 code')).optional(),
  /** FX spread over the mid rate and fee on the amount paid, in basis points. */
  fx_spread_bps: Bps.optional(),
  fx_fee_bps: Bps.optional(),
  /** API requests per minute and environment. */
  rate_limit_per_minute: z.number().int().min(1).max(1_000_000).optional(),
  /** Days the dashboard's request log keeps this business's requests. */
  request_log_retention_days: z.number().int().min(1).max(90).optional(),
  /**
   * Maker-checker approvals (the approvals branch): its shape is checked by that module
   * (`approvals.parsePolicy` / `validateSetting`) until its schema moves here at the merge.
   */
  approvals: z.unknown().optional(),
});
export type BusinessSettings = z.infer<typeof BusinessSettings>;

/** The write-side check: unknown keys (typos) are refused too. */
export const BusinessSettingsStrict = BusinessSettings.strict();

/** `path: message` lines of a failed parse, never the values (they can be anything). */
export function issuesOf(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(settings)'}: ${i.message}`).join('; ');
}

/**
 * A business's stored settings that do not parse (written around the CLI's and the dashboard's
 * checks): which business, and the paths of the bad entries with what is wrong (never the values).
 * Our fault, not the client's: a request answers 500 `internal_error` and the log carries this.
 */
export class InvalidStoredSettings extends Error {
  constructor(
    readonly tenantId: string,
    /** Dotted paths of the bad entries (`fees.internal_transfer.NGN.bps`). */
    readonly paths: string[],
    issues: string,
  ) {
    super(`invalid business settings of business ${tenantId}: ${issues}`);
    this.name = 'InvalidStoredSettings';
  }
}

/**
 * Stored settings as the typed object. A stored value that does not parse fails loudly
 * (`InvalidStoredSettings`, naming the business and the bad paths), as a fee typo must never
 * silently waive or invent fees.
 */
export function parseBusinessSettings(raw: unknown, tenantId: string): BusinessSettings {
  const parsed = BusinessSettings.safeParse(raw ?? {});
  if (!parsed.success) {
    const paths = parsed.error.issues.map((i) => i.path.join('.') || '(settings)');
    throw new InvalidStoredSettings(tenantId, paths, issuesOf(parsed.error));
  }
  return parsed.data;
}
