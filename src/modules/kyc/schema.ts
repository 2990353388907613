import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { isAlpha3Country } from '../../lib/countries.js';
import { isCalendarDate, UuidParam } from '../../lib/validators.js';

export const KYC_LEVELS = ['basic', 'intermediate'] as const;
export type KycLevel = (typeof KYC_LEVELS)[number];
export const KycLevelField = z.enum(KYC_LEVELS);

/** Identity documents (one of them) for individuals; PROOF_OF_ADDRESS is beyond the reference (intermediate level). */
export const ID_DOCUMENTS = ['PASSPORT', 'ID_CARD', 'DRIVERS'] as const;
export const DOC_TYPES = [...ID_DOCUMENTS, 'SELFIE', 'PROOF_OF_ADDRESS', 'REGISTRATION_CERTIFICATE'] as const;

const DateField = z.string().refine(isCalendarDate, { message: 'Must be a real date in YYYY-MM-DD format' });
const Text = (max: number) => z.string().trim().min(1, 'Must not be empty').max(max);

/**
 * The reference spells document types in upper case on /v1/customers/kyc/… and in lower case on
 * the older /v1/risk/… paths (`passport`, `drivers_license`): both are accepted (docs/api-rules.md#reference-examples).
 */
const DocTypeField = z.preprocess((v) => {
  if (typeof v !== 'string') return v;
  const upper = v.toUpperCase();
  return upper === 'DRIVERS_LICENSE' || upper === 'DRIVERS_LICENCE' ? 'DRIVERS' : upper;
}, z.enum(DOC_TYPES));

export const DocumentMetadata = z
  .strictObject({
    idDocType: DocTypeField,
    idDocSubType: z.enum(['FRONT_SIDE', 'BACK_SIDE']).optional(),
    country: z.string().refine((c) => /^[A-Z]{3}$/.test(c) && isAlpha3Country(c), {
      message: 'Must be an ISO 3166-1 alpha-3 country code in upper case (e.g. NGA)',
    }),
    firstName: Text(100).optional(),
    middleName: Text(100).optional(),
    lastName: Text(100).optional(),
    issuedDate: DateField.optional(),
    validUntil: DateField.optional(),
    number: Text(50).optional(),
    dob: DateField.optional(),
    placeOfBirth: Text(100).optional(),
  })
  .meta({ id: 'KycDocumentMetadata' });
export type DocumentMetadata = z.infer<typeof DocumentMetadata>;

export const StartKycBody = z.strictObject({ customer_id: UuidParam, kyc_level: KycLevelField.optional() }).meta({ id: 'StartKycRequest' });
export type StartKycBody = z.infer<typeof StartKycBody>;

export const StartKycResponse = z.object({
  status: z.literal('success'),
  review_status: z.string(),
  kyc_level: KycLevelField,
  applicant_id: z.string(),
  web_url: z.string(),
  web_url_expires_at: z.string(),
});

/** The base64 `content` may be up to 10 MB decoded: the route's body limit is 15 MiB. */
export const UploadDocumentBody = z
  .strictObject({
    customer_id: UuidParam,
    metadata: DocumentMetadata,
    content: z.string().min(1, 'Must not be empty'),
    filename: z
      .string()
      .trim()
      .min(1)
      .max(255)
      .regex(/\.(jpe?g|png|pdf)$/i, 'Extension must be .jpg, .jpeg, .png or .pdf'),
    /** The reference's (risk.yaml) switch for document quality warnings: accepted; the sandbox has none to give. */
    return_doc_warnings: z.boolean().optional(),
  })
  .meta({ id: 'UploadKycDocumentRequest' });
export type UploadDocumentBody = z.infer<typeof UploadDocumentBody>;

export const UploadDocumentResponse = z.object({
  status: z.literal('success'),
  customer_id: z.string(),
  document_id: z.string(),
  document_type: z
    .string()
    .describe('Upper case on /v1/customers/kyc/upload-document, lower case on /v1/risk/upload-document (as the reference)'),
  document_sub_type: z.string().optional(),
  country: z.string(),
  content_type: z.string(),
  size_bytes: z.number().int(),
  message: z.string(),
});

export const StartS2sBody = StartKycBody.meta({ id: 'StartKycS2sRequest' });

export const StartS2sResponse = z.object({
  status: z
    .enum(['pending', 'success'])
    .describe(
      '`pending` on /v1/customers/kyc/start-s2s; `success` (documents accepted, review started) on /v1/risk/start-kyc-s2s, as risk.yaml',
    ),
  applicant_id: z.string(),
  kyc_level: KycLevelField,
  message: z.string(),
});

export const KycStatusResponse = z
  .object({
    applicant_id: z.string(),
    customer_id: z.string(),
    kyc_level: KycLevelField,
    reviewStatus: z.enum(['init', 'pending', 'completed']),
    review_reason: z.string().optional(),
    reviewResult: z
      .object({
        reviewAnswer: z.enum(['approved', 'rejected']),
        rejectLabels: z.array(z.string()).optional(),
        reviewRejectType: z.string().optional(),
      })
      .optional(),
    reviewDate: z.string().optional(),
    priority: z.number().int(),
  })
  .meta({ id: 'KycStatus' });
export type KycStatusResponse = z.infer<typeof KycStatusResponse>;

/**
 * The sandbox simulation's answer: the case as KycStatus says it, in snake_case like every answer
 * of our own (KycStatus keeps the reference's camelCase, which its clients read).
 */
export const KycSimulationResponse = z
  .object({
    applicant_id: z.string(),
    customer_id: z.string(),
    kyc_level: KycLevelField,
    review_status: z.enum(['init', 'pending', 'completed']),
    review_reason: z.string().optional(),
    review_result: z
      .object({
        review_answer: z.enum(['approved', 'rejected']),
        reject_labels: z.array(z.string()).optional(),
        review_reject_type: z.string().optional(),
      })
      .optional(),
    review_date: z.string().optional(),
    priority: z.number().int(),
  })
  .meta({ id: 'KycSimulation' });
export type KycSimulationResponse = z.infer<typeof KycSimulationResponse>;

export function toSimulationResponse(s: KycStatusResponse): KycSimulationResponse {
  const { reviewStatus, reviewResult, reviewDate, ...rest } = s;
  return {
    ...rest,
    review_status: reviewStatus,
    ...(reviewResult
      ? {
          review_result: {
            review_answer: reviewResult.reviewAnswer,
            ...(reviewResult.rejectLabels ? { reject_labels: reviewResult.rejectLabels } : {}),
            ...(reviewResult.reviewRejectType ? { review_reject_type: reviewResult.reviewRejectType } : {}),
          },
        }
      : {}),
    ...(reviewDate ? { review_date: reviewDate } : {}),
  };
}

export const KycStatusQuery = z.strictObject({ level: KycLevelField.optional() });

export const KycDocument = z.object({
  id: z.string(),
  IDType: z.string(),
  IDSubType: z.string().optional(),
  IDNumber: z.string().optional(),
  IssuingCountry: z.string(),
  IssuedDate: z.string().optional(),
  ExpiryDate: z.string().optional(),
  has_front_image: z.boolean(),
  has_back_image: z.boolean(),
  OriginalFilename: z.string(),
  content_type: z.string(),
  size_bytes: z.number().int(),
  date_created: z.string(),
});

export const KycDocumentsResponse = z.object({
  customer_id: z.string(),
  documents: z.array(KycDocument),
  count: z.number().int(),
  page: z.number().int(),
  items_per_page: z.number().int(),
  total_pages: z.number().int().nullable(),
  total_items: z.number().int().nullable(),
  next_cursor: z.string().nullable(),
});

export const KycDocumentsQuery = PageQuery;

export const SimulateKycBody = z
  .strictObject({ outcome: z.enum(['approved', 'rejected', 'manual_review']), level: KycLevelField.optional() })
  .meta({ id: 'SimulateKycRequest' });
export type SimulateKycBody = z.infer<typeof SimulateKycBody>;

export const CustomerIdParams = z.strictObject({ customer_id: UuidParam });
