import type { Db, Queryable, Trx } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { AppError, notFound } from '../../http/errors.js';
import type { PageQuery } from '../../http/pagination.js';
import { randomBase62, sha256, sha256Hex } from '../../lib/crypto.js';
import { decodeBase64Strict, sniffFileType, typeOfExtension } from '../../lib/filetype.js';
import { newId } from '../../lib/ids.js';
import { kycConnectorFor } from '../../rails/kyc.js';
import { requireCustomer, setCustomerKycStatus } from '../customers/service.js';
import type { KycInfo } from '../customers/schema.js';
import type { z } from 'zod';
import * as repo from './repo.js';
import type { KycDocument, KycLevel, KycStatusResponse, StartKycBody, UploadDocumentBody } from './schema.js';
import { ID_DOCUMENTS } from './schema.js';
export { recheckAfterCustomerChange, reviewCase, simulateKyc, submitKyc } from './review.js';

/**
 * KYC cases: one per customer and level (`basic`, `intermediate`), states
 * init → pending → approved | rejected | manual_review (→ approved | rejected by an operator or a
 * simulation). A rejected case with reject type RETRY can start again; approved is final (409).
 * Documents belong to the customer and serve every level.
 */
type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;

const LEVEL_RANK: Record<KycLevel, number> = { basic: 1, intermediate: 2 };

export function toStatusResponse(c: repo.CaseRow): KycStatusResponse {
  const base = { applicant_id: c.id, customer_id: c.customer_id, kyc_level: c.level, priority: 0 };
  const reviewDate = c.reviewed_at ? c.reviewed_at.toISOString().replace('T', ' ').replace(/\.\d+Z$/, '+0000') : undefined;
  switch (c.status) {
    case 'init':
      return { ...base, reviewStatus: 'init' };
    case 'pending':
      return { ...base, reviewStatus: 'pending' };
    case 'manual_review':
      return { ...base, reviewStatus: 'pending', review_reason: 'manual_review' };
    case 'approved':
      return { ...base, reviewStatus: 'completed', reviewResult: { reviewAnswer: 'approved' }, ...(reviewDate ? { reviewDate } : {}) };
    case 'rejected':
      return {
        ...base,
        reviewStatus: 'completed',
        reviewResult: { reviewAnswer: 'rejected', rejectLabels: c.reject_labels, reviewRejectType: c.reject_type ?? 'RETRY' },
        ...(reviewDate ? { reviewDate } : {}),
      };
  }
}

/** The highest approved level of a customer, with when it was approved; undefined when none. */
export async function approvedLevel(db: Queryable, ctx: Scope, customerId: string) {
  const approved = (await repo.casesOf(db, ctx, [customerId])).filter((c) => c.status === 'approved');
  approved.sort((a, b) => LEVEL_RANK[b.level] - LEVEL_RANK[a.level]);
  const best = approved[0];
  return best ? { level: best.level, approvedAt: best.reviewed_at ?? best.updated_at } : undefined;
}

export function levelSatisfies(have: KycLevel | undefined, need: KycLevel): boolean {
  return have !== undefined && LEVEL_RANK[have] >= LEVEL_RANK[need];
}

/** Throws 409 kyc_already_completed when this level (or a higher one) is already approved. */
export async function assertNotCompleted(db: Queryable, ctx: Scope, customerId: string, level: KycLevel) {
  const approved = await approvedLevel(db, ctx, customerId);
  if (levelSatisfies(approved?.level, level)) {
    throw new AppError('kyc_already_completed', `KYC verification has already been completed for this customer (level ${approved!.level})`);
  }
}

/** The customer's `kyc` array: one entry per case. */
export async function kycInfoFor(db: Queryable, ctx: Scope, customerIds: string[]): Promise<Map<string, z.infer<typeof KycInfo>[]>> {
  const out = new Map<string, z.infer<typeof KycInfo>[]>();
  for (const c of await repo.casesOf(db, ctx, customerIds)) {
    const list = out.get(c.customer_id) ?? [];
    list.push({
      id: c.id,
      type: c.level,
      status: c.status,
      kyc_url: null,
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
  await requireCustomer(trx, ctx, body.customer_id, true);
  await assertNotCompleted(trx, ctx, body.customer_id, level);
  const current = await openCase(trx, ctx, body.customer_id, level);
  const token = randomBase62(43);
  const expiresAt = new Date(Date.now() + options.ttlMinutes * 60_000);
  const reopen = current.status === 'rejected' ? { status: 'init' as const, reject_labels: '[]', reject_type: null, review_reason: null, reviewed_at: null } : {};
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

/** The level's case, created in `init` when missing; locked for the rest of the transaction. */
export async function openCase(trx: Trx, ctx: Scope, customerId: string, level: KycLevel): Promise<repo.CaseRow> {
  const existing = await repo.findCase(trx, ctx, customerId, level, true);
  if (existing) {
    if (existing.status === 'rejected' && existing.reject_type === 'FINAL') {
      throw new AppError('invalid_state_transition', 'KYC was rejected with a final decision; it cannot be restarted');
    }
    return existing;
  }
  await repo.insertCase(trx, {
    id: newId(),
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    customer_id: customerId,
    level,
    status: 'init',
    connector: kycConnectorFor(ctx.environment).name,
  });
  await syncCustomerKycStatus(trx, ctx, customerId);
  return (await repo.findCase(trx, ctx, customerId, level, true))!;
}

/** Keeps customers.kyc_status in sync: `approved` once any level is approved, else the latest case's state. */
export async function syncCustomerKycStatus(
  trx: Trx,
  ctx: Scope,
  customerId: string,
  persons: { personId: string; kycStatus: string }[] = [],
) {
  const cases = await repo.casesOf(trx, ctx, [customerId]);
  const status = cases.some((c) => c.status === 'approved') ? 'approved' : (cases[0]?.status ?? 'not_started');
  await setCustomerKycStatus(trx, ctx, customerId, status, persons);
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
  if (meta.idDocType === 'SELFIE' && meta.idDocSubType) bad('metadata.idDocSubType', 'not_allowed', 'Omit idDocSubType for a SELFIE');
  const today = new Date().toISOString().slice(0, 10);
  if (meta.validUntil && meta.validUntil < today) bad('metadata.validUntil', 'expired', 'The document has expired');
  if (meta.issuedDate && meta.issuedDate > today) bad('metadata.issuedDate', 'invalid', 'Must not be in the future');
  if (meta.dob && meta.dob > today) bad('metadata.dob', 'invalid', 'Must not be in the future');
  return details;
}

/** Decodes the content and decides its type by magic bytes; the name's extension must agree. */
function decodeDocument(body: UploadDocumentBody, maxBytes: number) {
  const invalid = (message: string, detail: Detail) => new AppError('validation_failed', message, [detail]);
  const bytes = decodeBase64Strict(body.content);
  if (!bytes) throw invalid('Document content is not valid base64', { field: 'content', code: 'invalid', message: 'Must be base64' });
  if (bytes.length > maxBytes) {
    throw new AppError('payload_too_large', `The document exceeds the maximum size of ${Math.floor(maxBytes / 1024 / 1024)} MB`);
  }
  const sniffed = sniffFileType(bytes);
  if (!sniffed) {
    throw invalid('Unsupported file type; allowed types are JPEG, PNG and PDF', {
      field: 'content',
      code: 'unsupported_type',
      message: 'The file content is not a JPEG, PNG or PDF',
    });
  }
  if (typeOfExtension(body.filename) !== sniffed) {
    throw invalid('The file name does not match its content', { field: 'filename', code: 'mismatch', message: `The content is ${sniffed}; use a matching extension` });
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
    country: meta.country,
    content_type: sniffed,
    size_bytes: bytes.length,
    message: 'Document saved. Use /v1/customers/kyc/start-s2s to submit for verification.',
  };
}

/** Each missing document of a submission, as error details (412 missing_documents). */
export function missingDocuments(type: 'individual' | 'business', level: KycLevel, docs: { doc_type: string; doc_sub_type: string | null }[]) {
  const has = (t: string) => docs.some((d) => d.doc_type === t);
  const missing: { field: string; code: string; message: string }[] = [];
  if (type === 'business') {
    if (!has('REGISTRATION_CERTIFICATE')) missing.push({ field: 'registration_certificate', code: 'missing_document', message: 'Upload a REGISTRATION_CERTIFICATE' });
    return missing;
  }
  const idFront = docs.some((d) => (ID_DOCUMENTS as readonly string[]).includes(d.doc_type) && d.doc_sub_type !== 'BACK_SIDE');
  if (!idFront) missing.push({ field: 'id_document', code: 'missing_document', message: 'Upload the front side of a PASSPORT, ID_CARD or DRIVERS licence' });
  if (!has('SELFIE')) missing.push({ field: 'selfie', code: 'missing_document', message: 'Upload a SELFIE (JPEG or PNG)' });
  if (level === 'intermediate' && !has('PROOF_OF_ADDRESS')) {
    missing.push({ field: 'proof_of_address', code: 'missing_document', message: 'Upload a PROOF_OF_ADDRESS (intermediate level)' });
  }
  return missing;
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
  const documents: z.infer<typeof KycDocument>[] = page.items.map((d) => ({
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
  }));
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
