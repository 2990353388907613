import type { Queryable, Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError } from '../../core/errors.js';
import { kycAlreadyCompleted } from './errors.js';
import { newId } from '../../lib/ids.js';
import { kycConnectorFor } from '../../rails/kyc.js';
import { setCustomerKycStatus } from '../customers/service.js';
import * as repo from './repo.js';
import { ID_DOCUMENTS, type KycLevel, type KycStatusResponse } from './schema.js';

/** The KYC case helpers that both the service and the review share (kept apart so neither imports the other). */
const LEVEL_RANK: Record<KycLevel, number> = { basic: 1, intermediate: 2 };

export function toStatusResponse(c: repo.CaseRow): KycStatusResponse {
  const base = { applicant_id: c.id, customer_id: c.customer_id, kyc_level: c.level, priority: 0 };
  const reviewDate = c.reviewed_at
    ? c.reviewed_at
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, '+0000')
    : undefined;
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

/**
 * The cases of `customerIds` (at least one) as a statement its caller sends (db/pipeline.ts);
 * approvedLevelsOf reads its rows: the best approved level of each customer (absent: none).
 */
export const approvedLevelsStatement = (db: Queryable, ctx: Scope, customerIds: string[]) => repo.casesOfStatement(db, ctx, customerIds);

export function approvedLevelsOf(cases: repo.CaseRow[]): Map<string, KycLevel> {
  const out = new Map<string, KycLevel>();
  for (const c of cases) {
    const have = out.get(c.customer_id);
    if (c.status === 'approved' && (!have || LEVEL_RANK[c.level] > LEVEL_RANK[have])) out.set(c.customer_id, c.level);
  }
  return out;
}

export function levelSatisfies(have: KycLevel | undefined, need: KycLevel): boolean {
  return have !== undefined && LEVEL_RANK[have] >= LEVEL_RANK[need];
}

/** Throws 409 kyc_already_completed when this level (or a higher one) is already approved. */
export async function assertNotCompleted(db: Queryable, ctx: Scope, customerId: string, level: KycLevel) {
  const approved = await approvedLevel(db, ctx, customerId);
  if (levelSatisfies(approved?.level, level)) {
    throw kycAlreadyCompleted(approved!.level);
  }
}

/** The customer's `kyc` array: one entry per case. */
/** The level's case, created in `init` when missing; locked for the rest of the transaction. */
export async function openCase(trx: Trx, ctx: Scope, customerId: string, level: KycLevel): Promise<repo.CaseRow> {
  const existing = await repo.findCase(trx, ctx, customerId, level, 'update');
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
  return (await repo.findCase(trx, ctx, customerId, level, 'update'))!;
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

/** Each missing document of a submission, as error details (412 missing_documents). */
export function missingDocuments(
  type: 'individual' | 'business',
  level: KycLevel,
  docs: { doc_type: string; doc_sub_type: string | null }[],
) {
  const has = (t: string) => docs.some((d) => d.doc_type === t);
  const missing: { field: string; code: string; message: string }[] = [];
  if (type === 'business') {
    if (!has('REGISTRATION_CERTIFICATE'))
      missing.push({ field: 'registration_certificate', code: 'missing_document', message: 'Upload a REGISTRATION_CERTIFICATE' });
    return missing;
  }
  const idFront = docs.some((d) => (ID_DOCUMENTS as readonly string[]).includes(d.doc_type) && d.doc_sub_type !== 'BACK_SIDE');
  if (!idFront)
    missing.push({
      field: 'id_document',
      code: 'missing_document',
      message: 'Upload the front side of a PASSPORT, ID_CARD or DRIVERS licence',
    });
  if (!has('SELFIE')) missing.push({ field: 'selfie', code: 'missing_document', message: 'Upload a SELFIE (JPEG or PNG)' });
  if (level === 'intermediate' && !has('PROOF_OF_ADDRESS')) {
    missing.push({ field: 'proof_of_address', code: 'missing_document', message: 'Upload a PROOF_OF_ADDRESS (intermediate level)' });
  }
  return missing;
}
