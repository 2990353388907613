import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { UuidParam } from '../../lib/validators.js';

export const CHANNELS = [
  'avalanche',
  'ethereum',
  'solana',
  'stellar',
  'polygon',
  'ach',
  'wire',
  'swift',
  'bank_transfer',
  'mobile_money',
  'internal',
  'swap',
  'sepa',
  'base',
  'sui',
  'tron',
  'card',
  'card_funding',
  'card_withdrawal',
  'card_payment',
  'savings',
  'savings_withdrawal',
  'savings_interest',
] as const;
export const TRANSACTION_TYPES = [
  'internal_transfer',
  'crypto_transfer',
  'crypto_funding',
  'global_remittance',
  'card_funding',
  'card_withdrawal',
  'card_payment',
  'account_funding',
  'credit',
  'debit',
  'fee_charge',
  'subscription_fee',
  'invoice_payment',
] as const;
export const TRANSACTION_STATUSES = ['pending', 'completed', 'failed', 'waiting_approval'] as const;
export type Channel = (typeof CHANNELS)[number];
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

const Currency = z.string().regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 currency code such as USD');

/** Filters shared by the list and the export (the reference's names, validated). */
const Filters = {
  customer_id: UuidParam.optional(),
  account_id: UuidParam.optional(),
  card_id: UuidParam.optional(),
  payment_link_id: UuidParam.optional(),
  tx_hash: z.string().max(200).optional(),
  channel: z.enum(CHANNELS).optional(),
  direction: z.enum(['in', 'out']).optional(),
  status: z.enum(TRANSACTION_STATUSES).optional(),
  transaction_type: z.enum(TRANSACTION_TYPES).optional(),
  currency: Currency.optional(),
  reference: z.string().max(255).optional(),
};

export const ListTransactionsQuery = PageQuery.extend(Filters);
export type ListTransactionsQuery = z.infer<typeof ListTransactionsQuery>;

export const VolumeQuery = PageQuery.pick({ from: true, to: true, start_date: true, end_date: true }).extend({
  ...Filters,
  sending_account_id: UuidParam.optional(),
  receiving_account_id: UuidParam.optional(),
});
export type VolumeQuery = z.infer<typeof VolumeQuery>;

export const ExportQuery = PageQuery.pick({ from: true, to: true, start_date: true, end_date: true }).extend({
  ...Filters,
  export_format: z.enum(['csv', 'json']).default('csv'),
});
export type ExportQuery = z.infer<typeof ExportQuery>;

export const TransactionIdParams = z.strictObject({ transaction_id: UuidParam });

export const TransactionResponse = z
  .object({
    id: z.string(),
    account_id: z.string(),
    currency: z.string(),
    amount: z.string(),
    fee: z.string(),
    balance_before: z.string().nullable(),
    balance_after: z.string().nullable(),
    channel: z.string(),
    client_metadata: z.string().nullable(),
    client_reference: z.string().optional(),
    customer_id: z.string().optional().describe('Absent on a transaction of an account of the business itself'),
    date_created: z.string(),
    description: z.string(),
    direction: z.enum(['in', 'out']),
    external_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    receiving_account_id: z.string().nullable(),
    reference: z.string(),
    sending_account_id: z.string().nullable(),
    status: z.enum(TRANSACTION_STATUSES),
    tenant_id: z.string(),
    transaction_type: z.string(),
    tx_hash: z.null(),
  })
  .meta({ id: 'Transaction' });
export type TransactionResponse = z.infer<typeof TransactionResponse>;

export const VolumeResponse = z.object({
  /** The total when the matches are in one currency (amounts in different currencies never add up). */
  total_volume: z.string().optional().describe('Absent when the matches are in more than one currency: see by_currency'),
  currency: z.string().optional(),
  by_currency: z.array(z.object({ currency: z.string(), total_volume: z.string(), transaction_count: z.number().int() })),
});
