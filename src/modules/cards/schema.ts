import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { CountryCode, CurrencyCode, NameText, ShortText, UuidParam } from '../../lib/validators.js';

/** Amounts arrive as a JSON number or a decimal string; parseAmount judges them in the service. */
const AmountInput = z.union([z.string().max(40), z.number()]);

export const CARD_STATUSES = ['inactive', 'active', 'freeze', 'blocked', 'lost', 'stolen'] as const;
export type CardStatus = (typeof CARD_STATUSES)[number];
export const TERMINAL_STATUSES: readonly CardStatus[] = ['blocked', 'lost', 'stolen'];

/** The reference's `status` of a card application: the card lifecycle it leads to. */
export const APPLICATION_CARD_STATUSES = ['active', 'blocked', 'inactive'] as const;

export const APPLICATION_STATUSES = [
  'approved',
  'pending',
  'needs_verification',
  'needs_information',
  'manual_review',
  'denied',
  'locked',
  'canceled',
] as const;
export type ApplicationStatus = (typeof APPLICATION_STATUSES)[number];

export const AUTHORIZATION_STATUSES = ['approved', 'declined', 'captured', 'reversed', 'expired'] as const;
export const DECLINE_REASONS = [
  'insufficient_funds',
  'card_frozen',
  'card_inactive',
  'card_blocked',
  'card_expired',
  'limit_exceeded',
  'merchant_category_blocked',
  'do_not_honor',
] as const;
export type DeclineReason = (typeof DECLINE_REASONS)[number];

/** Merchant category: a 4-digit ISO 18245 code (5411) or a lower-case slug (groceries). */
const MerchantCategory = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^(\d{4}|[a-z][a-z0-9_]{1,49})$/, 'Use a 4-digit MCC (5411) or a category slug (groceries)');

// ---------- requests ----------

export const CardIdParams = z.strictObject({ card_id: UuidParam });
export const ApplicationIdParams = z.strictObject({ application_id: UuidParam });
export const AuthorizationIdParams = z.strictObject({ authorization_id: UuidParam });

export const CreateApplicationBody = z
  .strictObject({
    customer_id: UuidParam,
    account_id: UuidParam,
    annual_remuneration: AmountInput,
    estimated_monthly_limit: AmountInput,
    ip_address: z.union([z.ipv4(), z.ipv6()], { error: 'Must be an IPv4 or IPv6 address' }),
    currency: CurrencyCode.optional(),
  })
  .meta({ id: 'CreateCardApplicationRequest' });
export type CreateApplicationBody = z.infer<typeof CreateApplicationBody>;

export const ListApplicationsQuery = PageQuery.extend({
  customer_id: UuidParam.optional(),
  status: z.enum(APPLICATION_STATUSES).optional(),
});
export type ListApplicationsQuery = z.infer<typeof ListApplicationsQuery>;

export const ShippingAddressInput = z
  .strictObject({
    address_line1: z.string().trim().min(1).max(200),
    address_line2: z.string().trim().max(200).optional(),
    city: NameText,
    state: z.string().trim().min(1).max(100).optional(),
    postal_code: z.union([z.string().trim().min(1).max(20), z.number().int().nonnegative()]).transform(String),
    country_code: CountryCode,
    // The reference's example omits the '+'; E.164 digits with or without it are accepted.
    phone_number: z
      .string()
      .trim()
      .regex(/^\+?[1-9]\d{6,14}$/, 'Must be an international phone number (E.164 digits)'),
    method: z.enum(['standard', 'express', 'international', 'apc', 'uspsInternational', 'overnight']),
  })
  .meta({ id: 'CardShippingAddress' });

export const SpendingControlsInput = z.strictObject({
  activated: z.boolean().optional(),
  /** null removes the limit. */
  single_transaction_limit: AmountInput.nullable().optional(),
  daily_transaction_limit: AmountInput.nullable().optional(),
  monthly_transaction_limit: AmountInput.nullable().optional(),
  /** When not empty, only these merchant categories are approved. */
  allowed_merchant_categories: z.array(MerchantCategory).max(100).optional(),
  blocked_merchant_categories: z.array(MerchantCategory).max(100).optional(),
});
export type SpendingControlsInput = z.infer<typeof SpendingControlsInput>;

export const CreateCardBody = z
  .strictObject({
    customer_id: UuidParam,
    card_type: z.enum(['virtual', 'physical']),
    /** Sets the initial per-transaction and daily limits (as the reference's example shows). */
    card_limit: AmountInput,
    name_on_card: z
      .string()
      .trim()
      .min(2)
      .max(26)
      .regex(/^[A-Za-z][A-Za-z .'-]*$/, "Letters, spaces, . ' and - only"),
    currency: CurrencyCode.optional(),
    shipping_address: ShippingAddressInput.optional(),
    spending_controls: SpendingControlsInput.optional(),
  })
  .meta({ id: 'CreateCardRequest' });
export type CreateCardBody = z.infer<typeof CreateCardBody>;

export const ListCardsQuery = PageQuery.extend({
  customer_id: UuidParam.optional(),
  status: z.enum(CARD_STATUSES).optional(),
  card_type: z.enum(['virtual', 'physical']).optional(),
  currency: CurrencyCode.optional(),
});
export type ListCardsQuery = z.infer<typeof ListCardsQuery>;

export const UpdateCardStatusBody = z
  .strictObject({
    status: z.enum(['active', 'freeze', 'blocked', 'lost', 'stolen']),
    /** The reference's optional spending limit: sets the per-transaction and daily limits. */
    limit: AmountInput.optional(),
  })
  .meta({ id: 'UpdateCardStatusRequest' });
export type UpdateCardStatusBody = z.infer<typeof UpdateCardStatusBody>;

export const UpdatePinBody = z.strictObject({
  card_pin: z.string().regex(/^\d{4,6}$/, 'A PIN is 4 to 6 digits'),
});

export const WithdrawBody = z
  .strictObject({
    card_id: UuidParam,
    amount: AmountInput,
    /**
     * The account that receives the money (beyond the reference); it must be the card owner's.
     * Without it: the owner's oldest active account in the card's currency.
     */
    account_id: UuidParam.optional(),
  })
  .meta({ id: 'CardWithdrawRequest' });
export type WithdrawBody = z.infer<typeof WithdrawBody>;

export const SimulateAuthorizationBody = z.strictObject({
  amount: AmountInput,
  merchant_name: ShortText,
  merchant_category: MerchantCategory.optional(),
  decline_reason: z.enum(DECLINE_REASONS).optional(),
});
export type SimulateAuthorizationBody = z.infer<typeof SimulateAuthorizationBody>;

export const SettleAuthorizationBody = z.strictObject({ amount: AmountInput.optional() }).optional();

export const SimulateApplicationBody = z.strictObject({ status: z.enum(APPLICATION_STATUSES) });

export const SimulateFulfilmentBody = z.strictObject({ status: z.enum(['shipped', 'delivered', 'returned']) });

export const ListAuthorizationsQuery = PageQuery.extend({
  status: z.enum(AUTHORIZATION_STATUSES).optional(),
});
export type ListAuthorizationsQuery = z.infer<typeof ListAuthorizationsQuery>;

// ---------- responses ----------

const Address = z.object({
  street: z.string(),
  city: z.string(),
  state: z.string(),
  postal_code: z.string(),
  country_iso_code: z.string(),
});

export const SpendingControls = z.object({
  activated: z.boolean(),
  single_transaction_limit: z.string().optional().describe('Absent when there is no per-transaction limit'),
  daily_transaction_limit: z.string().optional().describe('Absent when there is no daily limit'),
  monthly_transaction_limit: z.string().nullable(),
  allowed_merchant_categories: z.array(z.string()),
  blocked_merchant_categories: z.array(z.string()),
  type: z.enum(['virtual', 'physical']),
});

export const CardResponse = z
  .object({
    id: z.string(),
    customer_id: z.string(),
    card_type: z.enum(['virtual', 'physical']),
    name_on_card: z.string(),
    masked_pan: z.string(),
    last4: z.string(),
    expiry: z.string(),
    status: z.enum(CARD_STATUSES),
    currency: z.string(),
    network: z.string(),
    spending_controls: SpendingControls,
    billing_address: Address,
    address: Address,
    shipping: z
      .object({
        address_line1: z.string(),
        address_line2: z.string().nullable(),
        city: z.string(),
        state: z.string().nullable(),
        postal_code: z.string(),
        country_code: z.string(),
        phone_number: z.string(),
        method: z.string(),
        fulfilment_status: z.string(),
      })
      .nullable(),
    date_activated: z.string().nullable(),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'Card' });
export type CardResponse = z.infer<typeof CardResponse>;

export const CreateCardResponse = z.object({
  message: z.string(),
  status: z.boolean(),
  id: z.string(),
  fee_charged: z.boolean(),
  fee_pending: z.boolean(),
  fee_id: z.string().optional().describe('Absent when no issuing fee was charged'),
  card: CardResponse,
});

export const ApplicationResponse = z
  .object({
    id: z.string(),
    customer_id: z.string(),
    account_id: z.string(),
    currency: z.string(),
    network: z.string(),
    status: z
      .enum(APPLICATION_CARD_STATUSES)
      .describe(
        "The reference's card lifecycle view of the application: active once approved, blocked once refused, inactive while undecided",
      ),
    application_status: z.enum(APPLICATION_STATUSES),
    application_link: z.string().optional().describe('Absent: the sandbox issuer needs no separate verification page'),
    annual_remuneration: z.string(),
    estimated_monthly_limit: z.string(),
    address: z.object({ street: z.string(), city: z.string(), state: z.string(), postal_code: z.string(), country_code: z.string() }),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'CardApplication' });
export type ApplicationResponse = z.infer<typeof ApplicationResponse>;

export const CreateApplicationResponse = z.object({
  message: z.string(),
  id: z.string(),
  status: z.enum(APPLICATION_CARD_STATUSES),
  application: ApplicationResponse,
});

export const BalanceResponse = z.object({
  card_id: z.string(),
  balance: z.string(),
  available_balance: z.string(),
  currency: z.string(),
});

export const SecretEnvelope = z
  .object({ ciphertext: z.string(), encrypted_key: z.string(), nonce: z.string() })
  .meta({ id: 'EncryptedCardSecret' });

export const ClientKeyHeaders = z.object({ 'x-client-public-key': z.string().optional() });

export const AuthorizationResponse = z
  .object({
    id: z.string(),
    card_id: z.string(),
    status: z.enum(AUTHORIZATION_STATUSES),
    amount: z.string(),
    captured_amount: z.string().nullable(),
    currency: z.string(),
    merchant_name: z.string(),
    merchant_category: z.string().nullable(),
    decline_reason: z.string().nullable(),
    expires_at: z.string().nullable(),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'CardAuthorization' });
export type AuthorizationResponse = z.infer<typeof AuthorizationResponse>;

export const WithdrawResponse = z.object({
  id: z.string(),
  card_id: z.string(),
  account_id: z.string(),
  amount: z.string(),
  currency: z.string(),
  status: z.literal('completed'),
  transaction_id: z.string(),
  date_created: z.string(),
});
export type WithdrawResponse = z.infer<typeof WithdrawResponse>;
