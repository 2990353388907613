import type { Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { kycConnectorFor, type KycDecision, type KycSubject } from '../../rails/kyc.js';
import { associatedPersons, requireCustomer } from '../customers/service.js';
import type { CustomerRow } from '../customers/service.js';
import { recordEvent } from '../webhooks/service.js';
import type { Config } from '../../config.js';
import { combineDecisions, decisionFromChecks, policyFrom, runComplianceChecks, type KycPolicy } from './compliance.js';
import * as repo from './repo.js';
import type { KycLevel, SimulateKycBody, StartKycBody } from './schema.js';
import { assertNotCompleted, missingDocuments, openCase, syncCustomerKycStatus, toStatusResponse } from './cases.js';

/**
 * Submissions and decisions. A submission runs our compliance checks and the environment's
 * connector (sandbox: magic values; live: manual review) in the caller's transaction, so the
 * case's new state, the customer's kyc_status and the events commit together.
 */
type PersonOutcome = { personId: string; kycStatus: string };

const EVENT_OF = {
  pending: 'customer.kyc.status.pending',
  manual_review: 'customer.kyc.status.manual_review',
  approved: 'customer.kyc.status.approved',
  rejected: 'customer.kyc.status.rejected',
} as const;

/** A decision, or the `pending` state of a submitted case. */
type Transition = KycDecision | { outcome: 'pending' };

/** Moves a case to a new state, syncs the kyc_status columns and records the event. */
async function transition(
  trx: Trx,
  ctx: Scope,
  c: repo.CaseRow,
  to: Transition,
  persons: PersonOutcome[],
  checks?: repo.ComplianceCheck[],
) {
  const decided = to.outcome === 'approved' || to.outcome === 'rejected';
  await repo.updateCase(trx, ctx, c.id, {
    status: to.outcome,
    review_reason: to.outcome === 'manual_review' ? to.reason : null,
    reject_labels: JSON.stringify(to.outcome === 'rejected' ? to.labels : []),
    reject_type: to.outcome === 'rejected' ? to.rejectType : null,
    reviewed_at: decided ? new Date() : null,
    ...(checks ? { checks: JSON.stringify(checks) } : {}),
  });
  await syncCustomerKycStatus(trx, ctx, c.customer_id, persons);
  const updated = (await repo.findCase(trx, ctx, c.customer_id, c.level))!;
  const status = toStatusResponse(updated);
  const resource = { id: c.customer_id, kyc_status: updated.status, ...status };
  await recordEvent(trx, ctx, EVENT_OF[to.outcome], resource, c.customer_id);
  return status;
}

function subjectsOf(customer: CustomerRow, persons: Awaited<ReturnType<typeof associatedPersons>>): KycSubject[] {
  if (customer.type === 'individual') {
    return [{ kind: 'individual', firstName: customer.first_name, lastName: customer.last_name, businessName: null }];
  }
  return [
    { kind: 'business', firstName: null, lastName: null, businessName: customer.business_name },
    ...persons.map((p) => ({ kind: 'associated_person' as const, firstName: p.first_name, lastName: p.last_name, businessName: null })),
  ];
}

/** Decision of a whole case: a business passes only when every associated person passes. */
async function decide(trx: Trx, ctx: Scope, policy: KycPolicy, customer: CustomerRow, c: repo.CaseRow, docTypes: string[]) {
  const connector = kycConnectorFor(ctx.environment);
  const compliance = await runComplianceChecks(trx, ctx, policy, customer);
  const persons = await associatedPersons(trx, customer.id);
  const subjects = subjectsOf(customer, persons);
  const personOutcomes: PersonOutcome[] = [];
  const personDecisions: KycDecision[] = [];
  for (const [i, p] of persons.entries()) {
    const own = compliance.persons.find((x) => x.personId === p.id)?.checks ?? [];
    const d = combineDecisions([
      decisionFromChecks(own),
      connector.submit({ caseId: c.id, level: c.level, subjects: [subjects[i + 1]!], documentTypes: docTypes }),
    ]);
    personOutcomes.push({ personId: p.id, kycStatus: d.outcome });
    if (d.outcome === 'rejected')
      personDecisions.push({ outcome: 'rejected', labels: ['ASSOCIATED_PERSON_REJECTED', ...d.labels], rejectType: d.rejectType });
    else personDecisions.push(d);
  }
  const ownChecks = compliance.checks.filter((x) => !x.subject.startsWith('associated_person:'));
  const decision = combineDecisions([
    decisionFromChecks(ownChecks),
    connector.submit({ caseId: c.id, level: c.level, subjects: subjects.slice(0, 1), documentTypes: docTypes }),
    ...personDecisions,
  ]);
  return { decision, personOutcomes, checks: compliance.checks };
}

/** Server-to-server submission (and the hosted page's "Submit"): documents must all be in. */
export async function submitKyc(trx: Trx, ctx: Scope, body: StartKycBody, policy: KycPolicy) {
  const level: KycLevel = body.kyc_level ?? 'basic';
  const customer = await requireCustomer(trx, ctx, body.customer_id, 'update');
  await assertNotCompleted(trx, ctx, customer.id, level);
  const docs = await repo.documentTypesOf(trx, ctx, customer.id);
  const missing = missingDocuments(customer.type, level, docs);
  if (missing.length > 0) {
    throw new AppError('missing_documents', undefined, missing);
  }
  const c = await openCase(trx, ctx, customer.id, level);
  if (c.status === 'pending' || c.status === 'manual_review') {
    throw new AppError('invalid_state_transition', 'This KYC verification is already under review');
  }
  await transition(trx, ctx, c, { outcome: 'pending' }, []);
  const pending = (await repo.findCase(trx, ctx, customer.id, level, 'update'))!;
  const result = await decide(trx, ctx, policy, customer, pending, [...new Set(docs.map((d) => d.doc_type))]);
  await transition(trx, ctx, pending, result.decision, result.personOutcomes, result.checks);
  return {
    status: 'pending' as const,
    applicant_id: c.id,
    kyc_level: level,
    message: 'KYC verification initiated. Status will be updated via webhook.',
  };
}

/** Sandbox: forces a result, creating the case when needed (documents not required). */
export async function simulateKyc(trx: Trx, ctx: Scope, customerId: string, body: SimulateKycBody) {
  const customer = await requireCustomer(trx, ctx, customerId, 'update');
  const level = body.level ?? 'basic';
  const existing = await repo.findCase(trx, ctx, customer.id, level, 'update');
  const c = existing ?? (await openCase(trx, ctx, customer.id, level));
  const decision = decisionFor(body.outcome, ['SANDBOX_SIMULATION']);
  const persons = (await associatedPersons(trx, customer.id)).map((p) => ({ personId: p.id, kycStatus: body.outcome }));
  return transition(trx, ctx, c, decision, persons);
}

function decisionFor(outcome: 'approved' | 'rejected' | 'manual_review', labels: string[]): KycDecision {
  if (outcome === 'rejected') return { outcome, labels, rejectType: 'RETRY' };
  if (outcome === 'manual_review') return { outcome, reason: 'manual_review' };
  return { outcome };
}

/** What an operator's decision may add to the outcome (the console; the CLI uses the defaults). */
export interface ReviewOptions {
  /**
   * The case the operator looked at and its `updated_at` then: when it was decided or changed
   * meanwhile (another operator was quicker), the decision is refused with 409 and changes nothing.
   */
  caseId?: string;
  seenVersion?: Date;
  /** Rejection labels sent to the business (default OPERATOR_DECISION) and the reject type (default RETRY). */
  labels?: string[];
  rejectType?: 'RETRY' | 'FINAL';
}

/**
 * Operator decision on a case waiting in manual review (live's manual connector). The customer's
 * row lock serializes decisions on one customer: the second of two simultaneous ones sees the
 * first's result and is refused.
 */
export async function reviewCase(
  trx: Trx,
  ctx: Scope,
  customerId: string,
  outcome: 'approved' | 'rejected',
  level?: KycLevel,
  options: ReviewOptions = {},
) {
  const customer = await requireCustomer(trx, ctx, customerId, 'update');
  const cases = await repo.casesOf(trx, ctx, [customer.id]);
  if (options.caseId !== undefined) {
    const seen = cases.find((x) => x.id === options.caseId);
    if (!seen) throw notFound('KYC case');
    const changed = options.seenVersion !== undefined && seen.updated_at.getTime() !== options.seenVersion.getTime();
    if (seen.status !== 'manual_review' || changed) {
      throw new AppError(
        'invalid_state_transition',
        `This case was decided or changed by someone else meanwhile (it is now ${seen.status})`,
      );
    }
  }
  const c = cases.find(
    (x) => x.status === 'manual_review' && (!level || x.level === level) && (!options.caseId || x.id === options.caseId),
  );
  if (!c) throw notFound('KYC case in manual review');
  const persons = (await associatedPersons(trx, customer.id)).map((p) => ({ personId: p.id, kycStatus: outcome }));
  const decision: KycDecision =
    outcome === 'rejected'
      ? { outcome, labels: options.labels?.length ? options.labels : ['OPERATOR_DECISION'], rejectType: options.rejectType ?? 'RETRY' }
      : decisionFor(outcome, ['OPERATOR_DECISION']);
  return transition(trx, ctx, c, decision, persons);
}

/**
 * Customer changed: the compliance checks run again for every case under review or approved.
 * A hit sends the case to manual review (never silently kept approved); a clean result changes nothing.
 */
export async function recheckAfterCustomerChange(trx: Trx, ctx: Scope, customerId: string, config: Config) {
  const policy = policyFrom(config);
  const cases = (await repo.casesOf(trx, ctx, [customerId])).filter((c) => c.status === 'approved' || c.status === 'pending');
  if (cases.length === 0) return;
  const customer = await requireCustomer(trx, ctx, customerId);
  const { checks } = await runComplianceChecks(trx, ctx, policy, customer);
  if (decisionFromChecks(checks) === undefined) return;
  for (const c of cases) await transition(trx, ctx, c, { outcome: 'manual_review', reason: 'manual_review' }, [], checks);
}
