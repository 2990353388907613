import type { RequestContext } from '../core/context.js';

/** Every ledger call is scoped to one business and environment. */
export type LedgerScope = Pick<RequestContext, 'tenantId' | 'environment'>;

export const SYSTEM_ROLES = ['settlement', 'fx_position', 'fee_income', 'card_settlement', 'suspense'] as const;
export type SystemRole = (typeof SYSTEM_ROLES)[number];

/** One line of a posting: signed minor units, credit positive (a debit is negative). */
export interface Leg {
  accountId: string;
  amount: bigint;
  currency: string;
}

export interface PostingInput {
  /** What moved money: 'transfer', 'funding', 'fee', 'fx', 'card_capture', ... */
  kind: string;
  /** The business object it belongs to (a transfer id, ...), for lookups and reconciliation. */
  reference?: string | null;
  metadata?: Record<string, unknown>;
  legs: Leg[];
}

export interface PostedEntry {
  id: string;
  accountId: string;
  amount: bigint;
  currency: string;
  /** Posted balance of the account right after this entry; before = balanceAfter - amount. */
  balanceAfter: bigint;
}

export interface PostedTransaction {
  id: string;
  kind: string;
  reference: string | null;
  createdAt: Date;
  entries: PostedEntry[];
}

export interface Balance {
  accountId: string;
  currency: string;
  posted: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
  /** posted - pendingDebits: what a customer account may still spend. */
  available: bigint;
}

export interface HoldInput {
  debitAccountId: string;
  creditAccountId: string;
  amount: bigint;
  currency: string;
  kind: string;
  reference?: string | null;
  metadata?: Record<string, unknown>;
}

export interface Hold {
  id: string;
  debitAccountId: string;
  creditAccountId: string;
  currency: string;
  amount: bigint;
  status: 'pending' | 'posted' | 'voided';
  postedAmount: bigint | null;
  kind: string;
  reference: string | null;
  /** What the hold was taken with; its posting carries it (with hold_id). */
  metadata: Record<string, unknown>;
  transactionId: string | null;
}
