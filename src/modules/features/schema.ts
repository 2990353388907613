import { z } from 'zod';
import { CountryCode, UuidParam } from '../../lib/validators.js';

const FeatureId = z.string().trim().min(1).max(64);
/** Free-form in the reference (additionalProperties: true); only the feature's own keys are kept. */
const ProviderData = z.record(z.string().max(64), z.unknown());

export const ListFeaturesQuery = z.strictObject({
  customer_id: UuidParam.optional(),
  country: CountryCode.optional(),
  status: z.enum(['active', 'inactive', 'all']).default('all'),
});

const RequirementOut = z.object({
  type: z.enum(['kyc_status', 'provider_data', 'document']),
  required: z.string(),
  field_type: z.string().optional(),
  description: z.string(),
});

export const FeatureListResponse = z.object({
  customer_id: z.string().optional().describe('The customer asked about; absent for the business-wide list'),
  features: z.array(
    z.object({
      feature_id: z.string(),
      name: z.string(),
      description: z.string(),
      activated: z.boolean(),
      status: z.enum(['active', 'inactive']),
      requirements: z.array(RequirementOut),
    }),
  ),
});

export const EligibilityBody = z
  .strictObject({ feature_id: FeatureId, customer_id: UuidParam, provider_data: ProviderData.optional() })
  .meta({ id: 'FeatureEligibilityRequest' });
export type EligibilityBody = z.infer<typeof EligibilityBody>;

export const ActivateBody = EligibilityBody.meta({ id: 'ActivateFeatureRequest' });

const Fulfilled = z.object({ type: z.string(), value: z.string(), fulfilled_at: z.string() });
const Pending = z.object({
  type: z.string(),
  required: z.string(),
  action: z.record(z.string(), z.string()),
});
export type Fulfilled = z.infer<typeof Fulfilled>;
export type Pending = z.infer<typeof Pending>;

export const EligibilityResponse = z
  .object({
    customer_id: z.string(),
    feature_id: z.string(),
    eligible: z.boolean(),
    requirements_fulfilled: z.array(Fulfilled),
    requirements_pending: z.array(Pending),
  })
  .meta({ id: 'FeatureEligibility' });

export const ActivateResponse = z
  .object({
    customer_id: z.string(),
    feature_id: z.string(),
    status: z.literal('active'),
    activated_at: z.string(),
    provider_data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'FeatureActivation' });
