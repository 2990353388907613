import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { UuidParam } from '../../lib/validators.js';
import { AccountResponse } from '../accounts/schema.js';

export const APPLICATION_STATUSES = ['draft', 'submitted', 'processing', 'manual_review', 'approved', 'rejected', 'expired'] as const;
export type ApplicationStatus = (typeof APPLICATION_STATUSES)[number];

/**
 * The reference's UnifiedApplicationData. The applicant's KYC details (individual / business)
 * are kept as sent; the account configuration is validated. Crypto fields are accepted and ignored.
 */
export const ApplicationData = z
  .strictObject({
    individual: z.record(z.string(), z.unknown()).optional(),
    business: z.record(z.string(), z.unknown()).optional(),
    account_type: z.enum(['regular', 'savings']),
    currency: z.string().regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 currency code'),
    label: z.string().trim().min(1).max(50).optional(),
    agreement_id: z.string().max(255).optional(),
    tos_link: z.string().max(2000).optional(),
    /** The reference's pricing tier label (`tier_1`): kept with the application as sent. */
    tier: z.string().trim().min(1).max(50).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    blockchain_network: z.string().max(50).optional(),
    wallet_address: z.string().max(200).optional(),
    wallet_id: z.string().max(100).optional(),
  })
  .meta({ id: 'ApplicationData' });
export type ApplicationData = z.infer<typeof ApplicationData>;

const ApplicationType = z.enum(['individual', 'business']);

export const CreateApplicationBody = z
  .strictObject({
    customer_id: UuidParam,
    application_type: ApplicationType,
    data: ApplicationData,
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'CreateAccountApplicationRequest' });
export type CreateApplicationBody = z.infer<typeof CreateApplicationBody>;

export const UpdateApplicationBody = z.strictObject({ data: ApplicationData });
export const ValidateApplicationBody = z.strictObject({ application_type: ApplicationType, data: ApplicationData });
export const TosBody = z.strictObject({ application_id: UuidParam, agreement_id: z.string().trim().min(1).max(255) });

const ValidationIssue = z.object({ field: z.string(), message: z.string(), code: z.string(), suggestion: z.string().optional() });
export type ValidationIssue = z.infer<typeof ValidationIssue>;

export const ApplicationResponse = z
  .object({
    id: z.string(),
    tenant_id: z.string(),
    customer_id: z.string(),
    application_type: z.string(),
    status: z.enum(APPLICATION_STATUSES),
    data: z.record(z.string(), z.unknown()),
    metadata: z.record(z.string(), z.unknown()),
    validation_errors: z.array(ValidationIssue),
    account_id: z.string().nullable(),
    submitted_at: z.string().optional().describe('Absent until submitted'),
    processed_at: z.string().optional().describe('Absent until processed'),
    created_at: z.string(),
    updated_at: z.string(),
    deleted_at: z.string().nullable(),
  })
  .meta({ id: 'AccountApplication' });
export type ApplicationResponse = z.infer<typeof ApplicationResponse>;

export const ProcessingResult = z.object({
  application_id: z.string(),
  status: z.enum(APPLICATION_STATUSES),
  account: AccountResponse.nullable(),
  errors: z.array(z.object({ stage: z.string(), message: z.string(), code: z.string() })),
  metadata: z.record(z.string(), z.unknown()),
});
export type ProcessingResult = z.infer<typeof ProcessingResult>;

export const SubmitAndProcessResponse = z.object({
  application: ApplicationResponse,
  processing_result: ProcessingResult,
  is_fully_processed: z.boolean(),
});

export const HistoryResponse = z.object({
  application_id: z.string(),
  history: z.array(
    z.object({
      id: z.string(),
      application_id: z.string(),
      action: z.string(),
      actor: z.string(),
      changes: z.record(z.string(), z.unknown()),
      created_at: z.string(),
    }),
  ),
});

export const ValidateResponse = z.object({ valid: z.boolean(), validation_errors: z.array(ValidationIssue) });
export const PendingResponse = z.object({ applications: z.array(ApplicationResponse), count: z.number().int() });
export const DeleteResponse = z.object({ success: z.boolean(), message: z.string() });

export const ApplicationIdParams = z.strictObject({ id: UuidParam });
export const ListApplicationsQuery = PageQuery.extend({
  status: z.enum(APPLICATION_STATUSES).optional(),
  customer_id: UuidParam.optional(),
});
export type ListApplicationsQuery = z.infer<typeof ListApplicationsQuery>;
