import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { UuidParam } from '../../lib/validators.js';

export const TRANSFER_STATUSES = ['pending', 'processing', 'completed', 'failed', 'returned'] as const;
export type TransferStatus = (typeof TRANSFER_STATUSES)[number];

/**
 * Destination types. `internal_account` is the reference's name for an account of this business
 * (its own or a customer's); `account` and `customer_account` are accepted as aliases. `card`
 * funds a card, `external_account` is a payout, and `crypto_wallet` is refused (fiat only).
 */
export const DESTINATION_TYPES = ['internal_account', 'account', 'customer_account', 'card', 'external_account', 'crypto_wallet'] as const;

const Amount = z.union([z.string(), z.number()]);

export const CreateTransferBody = z
  .strictObject({
    source: z.strictObject({
      source_type: z.enum(['internal_account', 'internal_crypto_wallet']).default('internal_account'),
      id: UuidParam,
      crypto_asset: z.string().max(50).optional(),
    }),
    destination: z.strictObject({
      destination_type: z.enum(DESTINATION_TYPES),
      id: UuidParam.optional(),
      rail: z.string().max(50).optional(),
      blockchain_network: z.string().max(50).optional(),
      wallet_address: z.string().max(200).optional(),
      blockchain_memo: z.string().max(200).optional(),
    }),
    amount: Amount,
    /** Optional: when sent it must be the source account's currency (else 422 currency_mismatch). */
    currency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 currency code')
      .optional(),
    customer_id: UuidParam.optional(),
    description: z.string().trim().max(500).optional(),
    client_reference: z.string().trim().min(1).max(255).optional(),
    additional_information: z.record(z.string(), z.unknown()).optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'TransferRequest' });
export type CreateTransferBody = z.infer<typeof CreateTransferBody>;

export const TransferResponse = z
  .object({
    id: z.string(),
    reference: z.string(),
    client_reference: z.string().nullable(),
    transfer_status: z.enum(TRANSFER_STATUSES),
    source: z.object({ source_type: z.string(), id: z.string() }),
    destination: z.object({ destination_type: z.string(), id: z.string().nullable(), rail: z.string().nullable() }),
    amount: z.string(),
    currency: z.string(),
    fee: z.string(),
    local_amount: z.string().nullable(),
    local_currency: z.string().nullable(),
    rate: z.string().nullable(),
    failure_reason: z.string().nullable(),
    transaction_id: z.string().optional().describe('Absent until the movement is booked (never null)'),
    customer_id: z.string().nullable(),
    description: z.string(),
    approval_status: z
      .enum(['waiting_approval', 'approved', 'rejected', 'expired'])
      .optional()
      .describe(
        "Payouts above the business's approval threshold (maker-checker): pending, funds held, not sent until approved in the dashboard. Absent when no approval was needed.",
      ),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'Transfer' });
export type TransferResponse = z.infer<typeof TransferResponse>;

export const TransferIdParams = z.strictObject({ transfer_id: UuidParam });

export const ListTransfersQuery = PageQuery.extend({
  status: z.enum(TRANSFER_STATUSES).optional(),
  account_id: UuidParam.optional(),
  customer_id: UuidParam.optional(),
});
export type ListTransfersQuery = z.infer<typeof ListTransfersQuery>;

/** One item of a bulk: an internal transfer with its own (required) client_reference. */
export const BulkTransferItem = z
  .strictObject({
    source: z.strictObject({ source_type: z.literal('internal_account').default('internal_account'), id: UuidParam }),
    destination: z.strictObject({ destination_type: z.enum(['internal_account', 'account', 'customer_account']), id: UuidParam }),
    ...CreateTransferBody.pick({ amount: true, currency: true, customer_id: true, description: true, metadata: true }).shape,
    client_reference: z.string().trim().min(1).max(255),
  })
  .meta({ id: 'BulkTransferItem' });

export const MAX_BULK_ITEMS = 1000;
export const CreateBulkBody = z
  .strictObject({
    transfers: z.array(BulkTransferItem).min(1).max(MAX_BULK_ITEMS),
    description: z.string().trim().max(500).optional(),
  })
  .meta({ id: 'BulkTransferRequest' });
export type CreateBulkBody = z.infer<typeof CreateBulkBody>;

const ItemError = z.object({
  code: z.string(),
  message: z.string(),
  details: z.array(z.object({ field: z.string(), code: z.string(), message: z.string() })),
});
export const BulkItemResult = z.object({
  index: z.number().int(),
  client_reference: z.string(),
  status: z.enum(['completed', 'failed']),
  transfer: TransferResponse.nullable(),
  error: ItemError.nullable(),
});
export type BulkItemResult = z.infer<typeof BulkItemResult>;

export const BulkResponse = z
  .object({
    id: z.string(),
    status: z.literal('completed'),
    description: z.string(),
    total_items: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    items: z.array(BulkItemResult),
    date_created: z.string(),
  })
  .meta({ id: 'BulkTransfer' });
export type BulkResponse = z.infer<typeof BulkResponse>;

export const BulkIdParams = z.strictObject({ bulk_id: UuidParam });
