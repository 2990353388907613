import type { Queryable } from '../db/client.js';
import type { RequestContext } from '../core/context.js';

type LedgerScope = Pick<RequestContext, 'tenantId' | 'environment'>;

/**
 * The payout connector interface: everything the product needs from a rail that pays money out
 * (bank transfer, mobile money, SEPA, ACH/wire, SWIFT, FPS). A real connector implements it
 * against a partner's API; the sandbox and the live manual connector keep their state in
 * `rail_payouts` (rails/repo.ts) so they run the same code paths as a real one would.
 */
export type Rail = 'ach' | 'wire' | 'sepa' | 'swift' | 'fps' | 'globalbank' | 'bank_transfer' | 'mobile_money';

/** The payee as the rail needs it (from the external account). */
export interface PayeeDetails {
  payeeType: string;
  accountName: string;
  accountNumber: string | null;
  iban: string | null;
  bic: string | null;
  routingNumber: string | null;
  sortCode: string | null;
  phoneNumber: string | null;
  institutionCode: string | null;
  country: string | null;
  currency: string;
}

export type VerifyResult = { verified: true; accountName: string } | { verified: false; reason: string };

export interface PayoutInstruction {
  transferId: string;
  rail: Rail;
  /** What the payee receives, in the payee's currency (minor units). */
  amount: bigint;
  currency: string;
  payee: PayeeDetails;
}

/** A payout instruction and the business and environment it is paid for. */
export interface ScopedPayout {
  scope: LedgerScope;
  payout: PayoutInstruction;
}

export type PayoutState = 'submitted' | 'settled' | 'failed' | 'returned';

export interface PayoutStatus {
  state: PayoutState;
  reason: string | null;
}

export interface PayoutConnector {
  readonly name: 'sandbox' | 'manual';
  /** Name enquiry: does the account exist, and whose is it? */
  verifyAccount(payee: PayeeDetails): Promise<VerifyResult>;
  /**
   * Hands payouts to the rail, together where the rail takes a batch (the dispatch job hands it
   * up to a pass's worth at once). Idempotent per transfer: a payout submitted again is the one
   * submitted before.
   */
  submit(db: Queryable, payouts: ScopedPayout[]): Promise<void>;
  status(db: Queryable, scope: LedgerScope, transferId: string): Promise<PayoutStatus | undefined>;
}

/** The identifier a payee is known by at its institution (account number, IBAN or wallet). */
export function payeeIdentifier(p: PayeeDetails): string {
  return p.iban ?? p.accountNumber ?? p.phoneNumber ?? '';
}
