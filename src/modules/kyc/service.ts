import type { Db, Queryable, Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { documentTooLarge } from './errors.js';
import type { PageQuery } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import { randomBase62, sha256, sha256Hex } from '../../lib/crypto.js';
import { decodeBase64Strict, sniffFileType } from '../../lib/filetype.js';
import { newId } from '../../lib/ids.js';
import { requireCustomer, type KycView } from '../customers/service.js';
import { recheckAfterCustomerChange } from './review.js';
import type { KycInfo } from '../customers/schema.js';
import type { z } from 'zod';
import * as repo from './repo.js';
import type { KycDocument, KycLevel, KycStatusResponse, StartKycBody, UploadDocumentBody } from './schema.js';
export { reviewCase, simulateKyc, submitKyc } from './review.js';
export { approvedLevel, approvedLevelsOf, approvedLevelsStatement, levelSatisfies } from './cases.js';
import { assertNotCompleted, missingDocuments, openCase, syncCustomerKycStatus, toStatusResponse } from './cases.js';

/**
 * KYC cases: one per customer and level (`basic`, `intermediate`), states
 * init → pending → approved | rejected | manual_review (→ approved | rejected by an operator or a
 * simulation). A rejected case with reject type RETRY can start again; approved is final (409).
 * Documents belong to the customer and serve every level.
 */

export async function kycInfoFor(db: Queryable, ctx: Scope, customerIds: string[]): Promise<Map<string, z.infer<typeof KycInfo>[]>> {
  const out = new Map<string, z.infer<typeof KycInfo>[]>();
  for (const c of await repo.casesOf(db, ctx, customerIds)) {
    const list = out.get(c.customer_id) ?? [];
    list.push({
      id: c.id,
      type: c.level,
      status: c.status,
      remark: c.status === 'rejected' ? c.reject_labels.join(', ') : (c.review_reason ?? ''),
      verified_at: c.status === 'approved' && c.reviewed_at ? c.reviewed_at.toISOString() : null,
    });
    out.set(c.customer_id, list);
  }
  return out;
}

export interface StartOptions {
  baseUrl: string;
  ttlMinutes: number;
}

/** Creates (or reopens) the level's case and a fresh hosted-page link; only the token's hash is stored. */
export async function startKyc(trx: Trx, ctx: Scope, body: StartKycBody, options: StartOptions) {
  const level = body.kyc_level ?? 'basic';
  await requireCustomer(trx, ctx, body.customer_id, 'update');
  await assertNotCompleted(trx, ctx, body.customer_id, level);
  const current = await openCase(trx, ctx, body.customer_id, level);
  const token = randomBase62(43);
  const expiresAt = new Date(Date.now() + options.ttlMinutes * 60_000);
  const reopen =
    current.status === 'rejected'
      ? { status: 'init' as const, reject_labels: '[]', reject_type: null, review_reason: null, reviewed_at: null }
      : {};
  await repo.updateCase(trx, ctx, current.id, { web_token_hash: sha256(token), web_token_expires_at: expiresAt, ...reopen });
  if (current.status === 'rejected') await syncCustomerKycStatus(trx, ctx, body.customer_id);
  return {
    status: 'success' as const,
    review_status: current.status === 'rejected' ? 'init' : toStatusResponse(current).reviewStatus,
    kyc_level: level,
    applicant_id: current.id,
    web_url: `${options.baseUrl.replace(/\/+$/, '')}/kyc/verify/${token}`,
    web_url_expires_at: expiresAt.toISOString(),
  };
}

const BUSINESS_DOCS = new Set(['REGISTRATION_CERTIFICATE']);

type Detail = { field: string; code: string; message: string };

/** Metadata rules that depend on the customer and today's date (every problem listed at once). */
function metadataProblems(customerType: 'individual' | 'business', meta: UploadDocumentBody['metadata']): Detail[] {
  const details: Detail[] = [];
  const bad = (field: string, code: string, message: string) => details.push({ field, code, message });
  if ((customerType === 'business') !== BUSINESS_DOCS.has(meta.idDocType)) {
    bad('metadata.idDocType', 'invalid', `${meta.idDocType} is not a document for a ${customerType} customer`);
  }
  // A selfie has one side: FRONT_SIDE (as risk.yaml's example sends) is accepted, BACK_SIDE is not.
  if (meta.idDocType === 'SELFIE' && meta.idDocSubType === 'BACK_SIDE')
    bad('metadata.idDocSubType', 'not_allowed', 'A SELFIE has no BACK_SIDE');
  const today = new Date().toISOString().slice(0, 10);
  if (meta.validUntil && meta.validUntil < today) bad('metadata.validUntil', 'expired', 'The document has expired');
  if (meta.issuedDate && meta.issuedDate > today) bad('metadata.issuedDate', 'invalid', 'Must not be in the future');
  if (meta.dob && meta.dob > today) bad('metadata.dob', 'invalid', 'Must not be in the future');
  return details;
}

/**
 * Decodes the content and decides its type by magic bytes alone: the file name's extension is not
 * held against it (docs/api-rules.md#reference-examples; the reference's own examples send PNG bytes as `.jpg`).
 */
function decodeDocument(body: UploadDocumentBody, maxBytes: number) {
  const invalid = (message: string, detail: Detail) => new AppError('validation_failed', message, [detail]);
  const bytes = decodeBase64Strict(body.content);
  if (!bytes) throw invalid('Document content is not valid base64', { field: 'content', code: 'invalid', message: 'Must be base64' });
  if (bytes.length > maxBytes) {
    throw documentTooLarge(maxBytes);
  }
  const sniffed = sniffFileType(bytes);
  if (!sniffed) {
    throw invalid('Unsupported file type; allowed types are JPEG, PNG and PDF', {
      field: 'content',
      code: 'unsupported_type',
      message: 'The file content is not a JPEG, PNG or PDF',
    });
  }
  if (body.metadata.idDocType === 'SELFIE' && sniffed === 'application/pdf') {
    throw invalid('A selfie must be an image', { field: 'content', code: 'invalid', message: 'Use a JPEG or PNG image' });
  }
  return { bytes, sniffed };
}

/** Validates and stores one document (content type by magic bytes; size limit; type fits the customer). */
export async function uploadDocument(trx: Trx, ctx: Scope, body: UploadDocumentBody, maxBytes: number) {
  const customer = await requireCustomer(trx, ctx, body.customer_id);
  await assertNotCompleted(trx, ctx, customer.id, 'intermediate');
  const meta = body.metadata;
  const problems = metadataProblems(customer.type, meta);
  if (problems.length) throw new AppError('validation_failed', 'The document is not valid for this customer', problems);
  const { bytes, sniffed } = decodeDocument(body, maxBytes);
  const id = newId();
  await repo.insertDocument(trx, {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: customer.id,
    doc_type: meta.idDocType,
    doc_sub_type: meta.idDocSubType ?? null,
    country: meta.country,
    first_name: meta.firstName ?? null,
    middle_name: meta.middleName ?? null,
    last_name: meta.lastName ?? null,
    number: meta.number ?? null,
    issued_date: meta.issuedDate ?? null,
    valid_until: meta.validUntil ?? null,
    dob: meta.dob ?? null,
    place_of_birth: meta.placeOfBirth ?? null,
    filename: body.filename,
    content_type: sniffed,
    size_bytes: bytes.length,
    sha256: sha256Hex(bytes),
    content: bytes,
  });
  return {
    status: 'success' as const,
    customer_id: customer.id,
    document_id: id,
    document_type: meta.idDocType,
    ...(meta.idDocSubType ? { document_sub_type: meta.idDocSubType } : {}),
    country: meta.country,
    content_type: sniffed,
    size_bytes: bytes.length,
    message: 'Document saved. Use /v1/customers/kyc/start-s2s to submit for verification.',
  };
}

export async function getKycStatus(db: Queryable, ctx: Scope, customerId: string, level?: KycLevel): Promise<KycStatusResponse> {
  await requireCustomer(db, ctx, customerId);
  const cases = await repo.casesOf(db, ctx, [customerId]);
  const found = level ? cases.find((c) => c.level === level) : cases[0];
  if (!found) throw notFound('KYC verification (not started for this customer)');
  return toStatusResponse(found);
}

export async function listDocuments(db: Queryable, ctx: Scope, customerId: string, query: PageQuery) {
  await requireCustomer(db, ctx, customerId);
  const page = await repo.listDocuments(db, ctx, customerId, query);
  // Absent, never null, where the reference types the field as a string (docs/api-rules.md#absent-values).
  const documents: z.infer<typeof KycDocument>[] = page.items.map((d) =>
    omitNulls(
      {
        id: d.id,
        IDType: d.doc_type,
        IDSubType: d.doc_sub_type,
        IDNumber: d.number,
        IssuingCountry: d.country,
        IssuedDate: d.issued_date,
        ExpiryDate: d.valid_until,
        has_front_image: d.doc_sub_type !== 'BACK_SIDE',
        has_back_image: d.doc_sub_type === 'BACK_SIDE',
        OriginalFilename: d.filename,
        content_type: d.content_type,
        size_bytes: d.size_bytes,
        date_created: d.created_at.toISOString(),
      },
      ['IDSubType', 'IDNumber', 'IssuedDate', 'ExpiryDate'],
    ),
  );
  const { items: _items, ...paging } = page;
  return { customer_id: customerId, documents, count: documents.length, ...paging };
}

/** Hosted page: the case a link's token opens, if the token is known and not expired. */
export async function caseForToken(db: Db, token: string) {
  if (!/^[0-9A-Za-z]{43}$/.test(token)) return undefined;
  const found = await repo.findCaseByTokenHash(db, sha256(token));
  if (!found || !found.web_token_expires_at || found.web_token_expires_at <= new Date()) return undefined;
  return found;
}

/** The customer of a case (hosted page). */
export async function customerForCase(db: Queryable, ctx: Scope, customerId: string) {
  return requireCustomer(db, ctx, customerId);
}

/** The documents still missing for a level (features use it to say how to become eligible). */
export async function missingDocumentsFor(db: Queryable, ctx: Scope, customerId: string, level: KycLevel) {
  const customer = await requireCustomer(db, ctx, customerId);
  return missingDocuments(customer.type, level, await repo.documentTypesOf(db, ctx, customerId));
}

/** KYC as the customers module sees it (their answers carry KYC info; an update re-runs checks). */
export const customerKycView: KycView = { infoFor: kycInfoFor, recheck: recheckAfterCustomerChange };
