import type { Environment } from '../core/context.js';

/**
 * KYC vendor connector. The service runs its own compliance checks first (age, country,
 * duplicates, sanctions); the connector then gives the identity decision for what is left.
 * A decision of `manual_review` leaves the case waiting for an operator
 * (`npm run --silent cli -- kyc review ...`) or, in sandbox, a simulation.
 */
export type KycDecision =
  | { outcome: 'approved' }
  | { outcome: 'rejected'; labels: string[]; rejectType: 'RETRY' | 'FINAL' }
  | { outcome: 'manual_review'; reason: string };

export interface KycSubject {
  kind: 'individual' | 'business' | 'associated_person';
  firstName: string | null;
  lastName: string | null;
  businessName: string | null;
}

export interface KycSubmission {
  caseId: string;
  level: 'basic' | 'intermediate';
  subjects: KycSubject[];
  documentTypes: string[];
}

export interface KycConnector {
  readonly name: string;
  submit(submission: KycSubmission): KycDecision;
}

/**
 * Sandbox: deterministic magic values (docs/api-rules.md#sandbox). A subject whose last name is
 * `Reject` fails, `Review` goes to manual review; otherwise the case is approved once its
 * documents are in (the service only submits complete cases).
 */
export const sandboxKycConnector: KycConnector = {
  name: 'sandbox',
  submit({ subjects }) {
    const last = subjects.map((s) => (s.lastName ?? '').trim().toLowerCase());
    if (last.includes('reject')) {
      return { outcome: 'rejected', labels: ['FORGERY', 'SANDBOX_MAGIC_VALUE'], rejectType: 'RETRY' };
    }
    if (last.includes('review')) return { outcome: 'manual_review', reason: 'manual_review' };
    return { outcome: 'approved' };
  },
};

/** Live without a vendor: every case waits for an operator's decision. */
export const manualKycConnector: KycConnector = {
  name: 'manual',
  submit: () => ({ outcome: 'manual_review', reason: 'manual_review' }),
};

export function kycConnectorFor(environment: Environment): KycConnector {
  return environment === 'sandbox' ? sandboxKycConnector : manualKycConnector;
}
