import { listInstitutions } from '../src/lib/institutions.js';
import { nubanCheckDigit } from '../src/lib/payee-validation.js';
import { verifyDuePayees } from '../src/modules/external-accounts/service.js';
import type { Client, TestApp } from './harness.js';

/** The sender details a cross-border payout needs (the reference's example person). */
export const remitter = {
  remitter_full_name: 'John Doe',
  remitter_country: 'US',
  remitter_document_number: 'A123456789',
  remitter_document_issue_date: '2020-01-15',
  remitter_document_expiry_date: '2035-01-15',
  remitter_date_of_birth: '1990-06-25',
  remitter_address: { address_line1: '123 Main Street', city: 'New York', state: 'US-NY', postal_code: '10001', country: 'US' },
  remitter_nationality: 'US',
};

/**
 * The body of a payout (`POST /v1/transfers`) from an account to a payee, with the sender details a
 * cross-border payout needs; `details` adds or overrides fields (description, customer_id, …).
 */
export function payoutBody(source: string, payee: string, amount: unknown, details: Record<string, unknown> = {}) {
  return {
    source: { source_type: 'internal_account', id: source },
    destination: { destination_type: 'external_account', id: payee },
    amount,
    additional_information: remitter,
    ...details,
  };
}

/** Valid GTBank (058) NUBANs, a new one per call, from `start` on (each file its own range). */
export function nubans(start: number): () => string {
  let serial = start;
  return () => {
    const s = `${serial++}123`;
    return s + String(nubanCheckDigit('058', s));
  };
}

/** The body of a customer's NGN bank payee at GTBank (`POST /v1/external-accounts`). */
export function gtbPayee(customerId: string, accountNumber: string, overrides: Record<string, unknown> = {}) {
  const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
  return {
    payee_type: 'bank_account',
    account_number: accountNumber,
    account_name: 'Amina Bello',
    currency: 'NGN',
    customer_id: customerId,
    institution_id: gtb.id,
    ...overrides,
  };
}

/**
 * A customer's NGN bank payee at GTBank, verified (the app must run with SANDBOX_RAIL_DELAY_MS 0):
 * ready to receive payouts. `accountNumber`: a NUBAN of the caller's own range (`nubans`).
 */
export async function verifiedPayee(t: TestApp, api: Client, customerId: string, accountNumber: string): Promise<string> {
  const res = await api.post('/v1/external-accounts', gtbPayee(customerId, accountNumber));
  if (res.status !== 202) throw new Error(`payee: ${res.text}`);
  await verifyDuePayees(t.db, t.unitOfWork, { SANDBOX_RAIL_DELAY_MS: 0 });
  return res.body.data.id as string;
}
