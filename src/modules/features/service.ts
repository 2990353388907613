/**
 * Product features: catalogue, eligibility, activation, and the gates other modules call.
 *
 * Gating functions (call them inside your service before the work; each throws an AppError that
 * the route renders, and changes nothing):
 *  - `requireFeature(db, ctx, customerId, featureId)` → 403 `feature_not_active` unless the
 *    customer activated the feature (e.g. `virtual_cards` before issuing a card,
 *    `international_transfers` before a SWIFT payout).
 *  - `requireAccountCurrency(db, ctx, customerId, currency, config)` → 403 `feature_not_active`
 *    when `currency` is not a home currency of the business and `<ccy>_account` is not active.
 *    Accounts of the business itself (customerId null) pass.
 *  - `requireKycLevel(db, ctx, customerId, level)` → 403 `kyc_level_insufficient` unless KYC is
 *    approved at `level` ('basic' | 'intermediate') or higher.
 *  - `checkTransactionLimit(db, ctx, customerId, currency, amountMinor, { spentTodayMinor, config })` →
 *    403 `kyc_level_insufficient` without approved KYC; 422 `limit_exceeded` when `amountMinor`
 *    (bigint, minor units) is above the per-transaction limit of the customer's KYC level, or
 *    `spentTodayMinor + amountMinor` above the daily limit (the caller, who owns the ledger,
 *    passes what the customer already sent today in that currency). Limits: config KYC_LIMITS,
 *    overridden by the business's `kyc_limits` setting (see limits.ts). A currency without a
 *    configured limit is refused. For customers' money only; the business's own accounts are
 *    not limited here.
 */
import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { featureNotActive, kycLevelInsufficient } from './errors.js';
import { formatAmount } from '../../lib/money.js';
import { newId } from '../../lib/ids.js';
import { requireCustomer } from '../customers/service.js';
import { approvedLevel, levelSatisfies, missingDocumentsFor } from '../kyc/service.js';
import type { KycLevel } from '../kyc/schema.js';
import { recordEvent } from '../webhooks/service.js';
import { catalogue, homeCurrencies, invalidValue, type FeatureDef } from './catalogue.js';
import { limitsFor } from './limits.js';
import * as repo from './repo.js';
import type { EligibilityBody, Fulfilled, Pending } from './schema.js';

type Ctx = Pick<RequestContext, 'tenantId' | 'environment' | 'settings'>;

export async function isFeatureActive(db: Queryable, ctx: Ctx, customerId: string, featureId: string): Promise<boolean> {
  return (await repo.findFeature(db, ctx, customerId, featureId))?.status === 'active';
}

export async function requireFeature(db: Queryable, ctx: Ctx, customerId: string, featureId: string): Promise<void> {
  if (!(await isFeatureActive(db, ctx, customerId, featureId))) {
    throw featureNotActive(featureId, [
      { field: 'feature_id', code: 'not_active', message: `Activate ${featureId} with POST /v1/risk/features/activate` },
    ]);
  }
}

export async function requireAccountCurrency(db: Queryable, ctx: Ctx, customerId: string | null, currency: string, config: Config) {
  if (customerId === null || homeCurrencies(ctx.settings, config).includes(currency)) return;
  await requireFeature(db, ctx, customerId, `${currency.toLowerCase()}_account`);
}

export async function requireKycLevel(db: Queryable, ctx: Ctx, customerId: string, level: KycLevel): Promise<void> {
  const approved = await approvedLevel(db, ctx, customerId);
  if (!levelSatisfies(approved?.level, level)) {
    throw kycLevelInsufficient(level, [
      { field: 'customer_id', code: 'kyc_level_insufficient', message: `Approved level: ${approved?.level ?? 'none'}; needed: ${level}` },
    ]);
  }
}

export async function checkTransactionLimit(
  db: Queryable,
  ctx: Ctx,
  customerId: string,
  currency: string,
  amountMinor: bigint,
  options: { spentTodayMinor?: bigint; config: Config },
): Promise<void> {
  const approved = await approvedLevel(db, ctx, customerId);
  const refusal = transactionLimitRefusal(ctx, approved?.level, currency, amountMinor, options.spentTodayMinor ?? 0n, options.config);
  if (refusal) throw refusal;
}

/**
 * The same rule as checkTransactionLimit, decided in memory from the customer's approved KYC
 * level (undefined: none) and what it already sent today: the refusal, or undefined when allowed.
 * A batch of transfers reads the levels and counters once and calls this per transfer.
 */
export function transactionLimitRefusal(
  ctx: Ctx,
  level: KycLevel | undefined,
  currency: string,
  amountMinor: bigint,
  spentTodayMinor: bigint,
  config: Config,
): AppError | undefined {
  if (!level) return kycLevelInsufficient();
  const limits = limitsFor(ctx.settings, level, currency, config);
  const refuse = (code: string, message: string) => new AppError('limit_exceeded', message, [{ field: 'amount', code, message }]);
  if (!limits) return refuse('no_limit_configured', `No ${currency} limit is configured for KYC level ${level}`);
  if (amountMinor > limits.perTransaction) {
    return refuse(
      'per_transaction_limit',
      `Above the per-transaction limit of ${formatAmount(limits.perTransaction, currency)} ${currency} for KYC level ${level}`,
    );
  }
  if (spentTodayMinor + amountMinor > limits.daily) {
    return refuse('daily_limit', `Above the daily limit of ${formatAmount(limits.daily, currency)} ${currency} for KYC level ${level}`);
  }
  return undefined;
}

function featureOf(config: Config, ctx: Ctx, featureId: string): FeatureDef {
  const def = catalogue(ctx.settings, config).find((f) => f.feature_id === featureId);
  if (!def) throw notFound('Feature');
  return def;
}

function requirementsOf(def: FeatureDef) {
  return [
    { type: 'kyc_status' as const, required: def.kycLevel, description: `KYC approved at level ${def.kycLevel} or higher` },
    ...def.providerData.map((f) => ({
      type: 'provider_data' as const,
      required: f.key,
      field_type: f.fieldType,
      description: f.optional ? `${f.description} (optional)` : f.description,
    })),
  ];
}

export async function listFeatures(
  db: Queryable,
  ctx: Ctx,
  query: { customer_id?: string; country?: string; status: string },
  config: Config,
) {
  if (query.customer_id) await requireCustomer(db, ctx, query.customer_id);
  const active = new Set(
    query.customer_id
      ? (await repo.featuresOf(db, ctx, query.customer_id)).filter((f) => f.status === 'active').map((f) => f.feature_id)
      : [],
  );
  // Features are offered where the business may onboard customers.
  const offered = !query.country || config.KYC_SUPPORTED_COUNTRIES.includes(query.country);
  const features = (offered ? catalogue(ctx.settings, config) : [])
    .map((def) => ({
      feature_id: def.feature_id,
      name: def.name,
      description: def.description,
      activated: active.has(def.feature_id),
      status: active.has(def.feature_id) ? ('active' as const) : ('inactive' as const),
      requirements: requirementsOf(def),
    }))
    .filter((f) => query.status === 'all' || f.status === query.status);
  return { ...(query.customer_id ? { customer_id: query.customer_id } : {}), features };
}

interface Evaluation {
  fulfilled: Fulfilled[];
  pending: Pending[];
  kycMissing: boolean;
  invalid: { field: string; code: string; message: string }[];
  data: Record<string, unknown>;
}

/** What the customer has and lacks for a feature; each pending item says how to satisfy it. */
async function evaluate(
  db: Queryable,
  ctx: Ctx,
  def: FeatureDef,
  customerId: string,
  given: Record<string, unknown> | undefined,
): Promise<Evaluation> {
  const ev: Evaluation = { fulfilled: [], pending: [], kycMissing: false, invalid: [], data: {} };
  await evaluateKyc(db, ctx, def, customerId, ev);
  evaluateProviderData(def, given, ev);
  return ev;
}

/** The KYC level the feature needs: fulfilled, or the documents and verification still to do. */
async function evaluateKyc(db: Queryable, ctx: Ctx, def: FeatureDef, customerId: string, ev: Evaluation): Promise<void> {
  const approved = await approvedLevel(db, ctx, customerId);
  if (levelSatisfies(approved?.level, def.kycLevel)) {
    ev.fulfilled.push({ type: 'kyc_status', value: 'completed', fulfilled_at: approved!.approvedAt.toISOString() });
  } else {
    ev.kycMissing = true;
    for (const doc of await missingDocumentsFor(db, ctx, customerId, def.kycLevel)) {
      ev.pending.push({
        type: 'document',
        required: doc.field,
        action: {
          type: 'document',
          url: '/v1/customers/kyc/upload-document',
          method: 'POST',
          doc_type: doc.field,
          description: doc.message,
        },
      });
    }
    ev.pending.push({
      type: 'kyc_status',
      required: def.kycLevel,
      action: {
        type: 'kyc_verification',
        url: '/v1/customers/kyc/start',
        method: 'POST',
        description: `Complete KYC verification at level ${def.kycLevel} (kyc_level: "${def.kycLevel}")`,
      },
    });
  }
}

/** The provider data the feature needs: each value given and valid is kept; the rest is pending. */
function evaluateProviderData(def: FeatureDef, given: Record<string, unknown> | undefined, ev: Evaluation): void {
  const now = new Date().toISOString();
  for (const field of def.providerData) {
    const value = given?.[field.key];
    const problem = value === undefined ? undefined : invalidValue(field, value);
    if (value !== undefined && !problem) {
      ev.data[field.key] = value;
      ev.fulfilled.push({ type: 'provider_data', value: field.key, fulfilled_at: now });
      continue;
    }
    if (value === undefined && field.optional) {
      ev.data.not_given = [...((ev.data.not_given as string[] | undefined) ?? []), field.key];
      continue;
    }
    if (problem) ev.invalid.push({ field: `provider_data.${field.key}`, code: 'invalid', message: problem });
    ev.pending.push({
      type: 'provider_data',
      required: field.key,
      action: {
        type: 'provider_data',
        data_key: field.key,
        field_type: field.fieldType,
        description: problem ?? `Provide ${field.key}: ${field.description}`,
      },
    });
  }
}

export async function checkEligibility(db: Queryable, ctx: Ctx, body: EligibilityBody, config: Config) {
  const def = featureOf(config, ctx, body.feature_id);
  await requireCustomer(db, ctx, body.customer_id);
  const stored = await repo.findFeature(db, ctx, body.customer_id, def.feature_id);
  const ev = await evaluate(db, ctx, def, body.customer_id, body.provider_data ?? stored?.provider_data);
  return {
    customer_id: body.customer_id,
    feature_id: def.feature_id,
    eligible: ev.pending.length === 0,
    requirements_fulfilled: ev.fulfilled,
    requirements_pending: ev.pending,
  };
}

/** Activates a feature once every requirement is met; activating an active feature changes nothing. */
export async function activateFeature(trx: Trx, ctx: Ctx, body: EligibilityBody, config: Config) {
  const def = featureOf(config, ctx, body.feature_id);
  await requireCustomer(trx, ctx, body.customer_id, 'update');
  const existing = await repo.findFeature(trx, ctx, body.customer_id, def.feature_id);
  if (existing?.status === 'active') return activationOf(existing);
  const ev = await evaluate(trx, ctx, def, body.customer_id, body.provider_data);
  const missing = ev.pending.filter(
    (p) => p.type === 'provider_data' && !ev.invalid.some((i) => i.field === `provider_data.${p.required}`),
  );
  const details = [
    ...ev.invalid,
    ...missing.map((p) => ({ field: `provider_data.${p.required}`, code: 'required', message: p.action.description ?? 'Required' })),
  ];
  if (details.length > 0) throw new AppError('validation_failed', 'provider_data is missing or invalid for this feature', details);
  if (ev.kycMissing) await requireKycLevel(trx, ctx, body.customer_id, def.kycLevel);
  await repo.activate(trx, {
    id: newId(),
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: body.customer_id,
    feature_id: def.feature_id,
    status: 'active',
    provider_data: JSON.stringify(ev.data),
    activated_at: new Date(),
  });
  const activation = activationOf((await repo.findFeature(trx, ctx, body.customer_id, def.feature_id))!);
  await recordEvent(trx, ctx, 'feature.activated', { id: `${body.customer_id}:${def.feature_id}`, ...activation }, body.customer_id);
  return activation;
}

function activationOf(row: repo.FeatureRow) {
  return {
    customer_id: row.customer_id,
    feature_id: row.feature_id,
    status: 'active' as const,
    activated_at: (row.activated_at ?? row.created_at).toISOString(),
    provider_data: row.provider_data,
  };
}
