import { z } from 'zod';
import type { Config } from '../../config.js';
import { AppError, validationError, type ErrorDetail } from '../../core/errors.js';
import { parseAmount } from '../../lib/money.js';
import { PastDate, Address, CountryCode, NameText, ShortText, isCalendarDate } from '../../lib/validators.js';
import type { Rail } from '../../rails/index.js';
import type { Queryable } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import type { BusinessSettings } from '../../core/settings.js';
import { convertAmount, getRate, type FxRate } from '../fx/service.js';
import { feeOf } from '../pricing/service.js';

/**
 * The rules of a payout that do not touch the database: which rail a payee uses, the remitter
 * block, fees, limits and the FX conversion. Kept apart from the money movement so each reads
 * on its own.
 */

type PayeeType = 'ach_wire' | 'sepa' | 'swift' | 'bank_account' | 'mobile_money' | 'fps';

/** The rail a payee's type implies; `requested` (optional in the request) must agree with it. */
export function railFor(payeeType: PayeeType, paymentRail: string | null, requested: string | undefined): Rail {
  const natural: Rail =
    payeeType === 'ach_wire'
      ? paymentRail === 'ach'
        ? 'ach'
        : 'wire'
      : payeeType === 'bank_account'
        ? 'bank_transfer'
        : (payeeType as Rail);
  if (requested === undefined) return natural;
  const allowed: Record<PayeeType, string[]> = {
    ach_wire: ['ach', 'wire'],
    sepa: ['sepa'],
    swift: ['swift'],
    fps: ['fps'],
    bank_account: ['bank_transfer', 'globalbank'],
    mobile_money: ['mobile_money', 'globalbank'],
  };
  if (!allowed[payeeType].includes(requested)) {
    throw validationError([
      { field: 'destination.rail', code: 'invalid', message: `A ${payeeType} payee is paid by ${allowed[payeeType].join(' or ')}` },
    ]);
  }
  return requested === 'globalbank' ? natural : (requested as Rail);
}

/** The transaction channel of a rail (the transactions module's closed list). */
export function channelOf(rail: Rail): 'ach' | 'wire' | 'sepa' | 'swift' | 'bank_transfer' | 'mobile_money' {
  if (rail === 'fps' || rail === 'globalbank' || rail === 'bank_transfer') return 'bank_transfer';
  return rail;
}

const Remitter = z.strictObject({
  remitter_full_name: ShortText,
  remitter_country: CountryCode,
  remitter_document_number: z.string().trim().min(1).max(100),
  remitter_document_issue_date: PastDate.optional(),
  remitter_document_expiry_date: z.string().refine(isCalendarDate, 'Must be a real date in YYYY-MM-DD format').optional(),
  remitter_date_of_birth: PastDate,
  remitter_address: Address,
  remitter_nationality: CountryCode,
  remitter_first_name: NameText.optional(),
  remitter_last_name: NameText.optional(),
});
export type Remitter = z.infer<typeof Remitter>;

/**
 * The reference's remitter block: required for bank account and mobile money beneficiaries
 * (cross-border remittance), optional but still checked for the other payee types.
 */
export function parseRemitter(payeeType: PayeeType, raw: Record<string, unknown> | undefined): Remitter | undefined {
  const required = payeeType === 'bank_account' || payeeType === 'mobile_money';
  if (raw === undefined) {
    if (!required) return undefined;
    throw validationError([
      {
        field: 'additional_information',
        code: 'required',
        message: 'Remitter details are required for bank account and mobile money payees',
      },
    ]);
  }
  const parsed = Remitter.safeParse(raw);
  if (parsed.success) {
    const expiry = parsed.data.remitter_document_expiry_date;
    if (expiry && expiry < new Date().toISOString().slice(0, 10)) {
      throw validationError([
        { field: 'additional_information.remitter_document_expiry_date', code: 'invalid', message: 'The document has expired' },
      ]);
    }
    return parsed.data;
  }
  const details: ErrorDetail[] = parsed.error.issues.flatMap((issue) => {
    const path = ['additional_information', ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys')
      return issue.keys.map((k) => ({ field: `${path}.${k}`, code: 'unknown_field', message: 'Unknown field' }));
    const missing = issue.code === 'invalid_type' && issue.input === undefined;
    return [{ field: path, code: missing ? 'required' : 'invalid', message: missing ? 'Required' : issue.message }];
  });
  throw validationError(details, 'Invalid additional_information');
}

/** Fee in the source currency: the business's `fees.payout_<rail>` rule, else the configured default. */
export function payoutFee(
  settings: BusinessSettings,
  rail: Rail,
  currency: string,
  amount: bigint,
  config: Pick<Config, 'PAYOUT_FEES'>,
): bigint {
  const defaults = config.PAYOUT_FEES;
  return feeOf(settings.fees?.[`payout_${rail}`] ?? defaults[rail] ?? defaults['*'], currency, amount);
}

/** 422 limit_exceeded above the rail's largest payout (business setting `payout_limits`, else config). */
export function assertWithinRailLimit(
  settings: BusinessSettings,
  rail: Rail,
  currency: string,
  amount: bigint,
  config: Pick<Config, 'PAYOUT_LIMITS'>,
): void {
  const own = settings.payout_limits;
  const defaults = config.PAYOUT_LIMITS;
  const table = own?.[rail] ?? own?.['*'] ?? defaults[rail] ?? defaults['*'];
  const max = table?.[currency] ?? table?.['*'];
  if (max === undefined) return;
  if (amount > parseAmount(max, currency, 'limit')) {
    throw new AppError('limit_exceeded', undefined, [
      { field: 'amount', code: 'limit_exceeded', message: `At most ${String(max)} ${currency} per ${rail} transfer` },
    ]);
  }
}

export interface Conversion {
  localAmount: bigint;
  localCurrency: string;
  rate: string | null;
  midRate: string | null;
  spreadBps: number;
}

/**
 * What the payee receives: the same amount, or the amount at the FX module's current customer
 * rate (mid less the business's spread, the sandbox market of /v1/simulations/fx/rates), rounded
 * down to the payee currency's minor unit; the remainder stays in the FX position.
 */
export async function convert(
  db: Queryable,
  ctx: RequestContext,
  amount: bigint,
  from: string,
  to: string,
  config: Config,
): Promise<Conversion> {
  if (from === to) return { localAmount: amount, localCurrency: to, rate: null, midRate: null, spreadBps: 0 };
  let fx: FxRate;
  try {
    fx = await getRate(db, ctx, from, to, 'sell', config);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'validation_failed') throw err;
    throw new AppError('currency_mismatch', undefined, [
      { field: 'destination.id', code: 'currency_mismatch', message: `Payouts from ${from} to ${to} are not available` },
    ]);
  }
  const localAmount = convertAmount(amount, from, to, fx.rate, 'down');
  if (localAmount <= 0n) {
    throw new AppError('invalid_amount', undefined, [
      { field: 'amount', code: 'invalid_amount', message: `Converts to less than one minor unit of ${to}` },
    ]);
  }
  return { localAmount, localCurrency: to, rate: fx.rate, midRate: fx.midRate, spreadBps: fx.spreadBps };
}

/**
 * How a payout made by another module differs from one made with POST /v1/transfer: an FX order
 * settling to its standing settlement instruction (`ssi`) pays out its proceeds.
 */
export interface PayoutOptions {
  /** The remitter on file (the order's own customer), instead of `additional_information`. */
  remitter: unknown;
  /** The payout fee comes out of `amount` (the payee receives amount - fee) instead of on top. */
  feeIncluded: boolean;
  /** The payout needs no approval of its own (the order it settles was approved). */
  approved: boolean;
  fxOrderId: string;
}
