import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { CountryCode, UuidParam } from '../../lib/validators.js';

export const COLLECTION_STATUSES = ['pending', 'completed', 'failed', 'expired'] as const;
const Currency = z.string().regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 currency code');
const Amount = z.union([z.string(), z.number()]);
const Text = (max: number) => z.string().trim().min(1).max(max);
const Metadata = z.record(z.string(), z.unknown()).refine((m) => JSON.stringify(m).length <= 8192, 'At most 8 KiB of metadata');

/** Where the money lands: an account of the business (its own or a customer's). Fiat only. */
const Destination = z.strictObject({
  destination_type: z.enum(['internal_account', 'internal_crypto_wallet', 'external_crypto_wallet']),
  id: UuidParam.optional(),
  // The reference's crypto fields: accepted and ignored (docs/api-rules.md#unknown-fields).
  wallet_address: z.string().max(200).optional(),
  network: z.string().max(50).optional(),
});

export const CreateCollectionBody = z
  .strictObject({
    amount: Amount,
    currency: Currency,
    country: CountryCode,
    customer_id: UuidParam,
    client_customer_id: Text(255).optional(),
    client_reference: Text(255).optional(),
    metadata: Metadata.optional(),
    source: z.strictObject({
      source_type: z.literal('external'),
      methods: z
        .array(z.enum(['card', 'apple_pay', 'google_pay', 'pix', 'mobile_money', 'bank_transfer']))
        .min(1)
        .max(6),
      /** Mobile money: the payer's wallet number (E.164), beyond the reference. */
      phone_number: z.string().trim().max(20).optional(),
    }),
    destination: Destination,
  })
  .meta({ id: 'CollectionRequest' });
export type CreateCollectionBody = z.infer<typeof CreateCollectionBody>;

export const BankInstructions = z.object({
  account_number: z.string(),
  account_name: z.string().nullable(),
  bank_name: z.string().nullable(),
  reference: z.string(),
  amount: z.string(),
  currency: z.string(),
});

export const CollectionResponse = z
  .object({
    id: z.string(),
    transaction_id: z.string(),
    kind: z.enum(['collection', 'payment_intent']),
    status: z.enum(COLLECTION_STATUSES),
    transaction_status: z.enum(COLLECTION_STATUSES),
    detailed_status: z.string(),
    method: z.enum(['card', 'bank_transfer', 'mobile_money']),
    amount: z.string(),
    currency: z.string(),
    country: z.string(),
    fee: z.string(),
    net_amount: z.string(),
    customer_id: z.string(),
    client_customer_id: z.string().nullable(),
    client_reference: z.string().optional(),
    destination: z.object({ destination_type: z.literal('internal_account'), id: z.string() }),
    payment_link: z.string().optional().describe('The hosted checkout page while a card collection is pending; absent otherwise'),
    raw_payment_link: z.string().optional(),
    instruction: z.string().nullable(),
    bank_transfer: BankInstructions.nullable(),
    failure_code: z.string().nullable(),
    failure_reason: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    account_transaction_id: z.string().nullable(),
    expires_at: z.string(),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'Collection' });
export type CollectionResponse = z.infer<typeof CollectionResponse>;

export const CollectionIdParams = z.strictObject({ id: UuidParam });

export const ListCollectionsQuery = PageQuery.extend({
  status: z.enum(COLLECTION_STATUSES).optional(),
  customer_id: UuidParam.optional(),
  method: z.enum(['card', 'bank_transfer', 'mobile_money']).optional(),
});
export type ListCollectionsQuery = z.infer<typeof ListCollectionsQuery>;

export const CreatePaymentIntentBody = z
  .strictObject({
    customer_id: UuidParam,
    client_customer_id: Text(255).optional(),
    amount: Amount,
    currency: Currency,
    country: CountryCode.optional(),
    client_reference: Text(255).optional(),
    destination: Destination,
    source: z.strictObject({
      source_type: z.literal('external'),
      id: Text(100).optional(),
      methods: z.array(z.literal('card')).min(1).max(1),
    }),
    card_token: Text(100).optional(),
    metadata: Metadata.optional(),
  })
  .meta({ id: 'CreatePaymentIntentRequest' });
export type CreatePaymentIntentBody = z.infer<typeof CreatePaymentIntentBody>;

export const PaymentIntentResponse = z
  .object({
    intent_id: z.string(),
    status: z.enum(['created', 'succeeded', 'failed']),
    collection_status: z.enum(COLLECTION_STATUSES),
    client_reference: z.string().nullable(),
    amount: z.string(),
    currency: z.string(),
    requires_action: z.boolean(),
    payment_link: z.string().nullable(),
    transaction_id: z.string().nullable(),
    failure_code: z.string().nullable(),
    failure_message: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    expires_at: z.string(),
  })
  .meta({ id: 'PaymentIntent' });

const Billing = {
  first_name: Text(100).optional(),
  last_name: Text(100).optional(),
  email: z.email().max(254).optional(),
  phone_number: z.string().trim().max(20).optional(),
  date_of_birth: z.string().max(10).optional(),
  billing_address1: Text(200).optional(),
  billing_city: Text(100).optional(),
  billing_state: Text(100).optional(),
  billing_zip: Text(20).optional(),
  billing_country: CountryCode.optional(),
};

export const ChargeCardBody = z
  .strictObject({ payment_intent_id: UuidParam, card_token: Text(100), ...Billing })
  .meta({ id: 'ChargeCardRequest' });
export type ChargeCardBody = z.infer<typeof ChargeCardBody>;

export const ChargeCardResponse = z.object({
  payment_intent_id: z.string(),
  transaction_id: z.string().nullable(),
  status: z.enum(['succeeded', 'failed']),
  requires_action: z.boolean(),
  failure_code: z.string().nullable(),
  failure_message: z.string().nullable(),
});

export const SavedCardResponse = z
  .object({
    id: z.string(),
    card_token: z.string(),
    customer_id: z.string().nullable(),
    card_last4: z.string(),
    card_brand: z.string(),
    card_exp_month: z.string(),
    card_exp_year: z.string(),
    is_default: z.boolean(),
    is_expiring_soon: z.boolean(),
    billing_info: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'SavedCard' });
export type SavedCardResponse = z.infer<typeof SavedCardResponse>;

export const ListSavedCardsQuery = PageQuery.extend({ customer_id: UuidParam.optional() });
export type ListSavedCardsQuery = z.infer<typeof ListSavedCardsQuery>;
export const SavedCardParams = z.strictObject({ card_id: UuidParam });

/** Card details as typed on the checkout page or sent to the sandbox token simulation. */
export const CardInput = {
  card_number: z.string().trim().max(23),
  expiry: z.string().trim().max(7),
  cvv: z.string().trim().max(4),
};

export const CardTokenBody = z
  .strictObject({ ...CardInput, customer_id: UuidParam.optional(), client_customer_id: Text(255).optional() })
  .meta({ id: 'SimulateCardTokenRequest' });
export type CardTokenBody = z.infer<typeof CardTokenBody>;

export const CheckoutPayBody = z.strictObject({
  session: z.string().max(100),
  ...CardInput,
  cardholder_name: z.string().trim().max(100).optional(),
  save_card: z.boolean().optional(),
});
export type CheckoutPayBody = z.infer<typeof CheckoutPayBody>;

export const SimulationReasonBody = z.strictObject({ reason: z.string().trim().min(1).max(500).optional() });
