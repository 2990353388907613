import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { UuidParam } from '../../lib/validators.js';

const Ccy = z.string().regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 currency code such as USD');
/** Amounts and rates: a JSON number or a decimal string, judged as sent by the service. */
const Decimal = z.union([z.string().max(40), z.number()]);
const QueryBool = z.enum(['true', 'false']).transform((v) => v === 'true');

export const SupportedCurrenciesQuery = z.strictObject({ include_crypto: QueryBool.optional() });

export const SupportedCurrency = z
  .object({
    from_currency: z.string(),
    to_currency: z.string(),
    currency_pair: z.string(),
    pair_type: z.literal('fiat/fiat'),
    from_currency_name: z.string(),
    to_currency_name: z.string(),
  })
  .meta({ id: 'FxSupportedCurrency' });

const PairList = z
  .string()
  .max(2000)
  .refine((s) => s.split(',').every((p) => /^[A-Za-z0-9]{2,10}\/[A-Za-z0-9]{2,10}$/.test(p.trim())), {
    message: 'Must be comma-separated pairs in FROM/TO format (e.g. USD/ZAR,EUR/GBP)',
  });

export const RatesQuery = z.strictObject({
  include_crypto: QueryBool.optional(),
  from_currency: z.string().max(10).optional(),
  to_currency: z.string().max(10).optional(),
  currency_pairs: PairList.optional(),
  direction: z.enum(['BUY', 'SELL']).optional(),
});
export type RatesQuery = z.infer<typeof RatesQuery>;

export const PairRate = z
  .object({
    rate: z.string().describe('Customer rate: to_currency units per 1 from_currency, spread included'),
    mid_rate: z.string(),
    spread_bps: z.number().int(),
    direction: z.enum(['BUY', 'SELL']),
    currency_pair: z.string(),
    pair_type: z.literal('fiat/fiat'),
    from_currency: z.string(),
    from_currency_name: z.string(),
    to_currency: z.string(),
    to_currency_name: z.string(),
    timestamp: z.string(),
  })
  .meta({ id: 'FxPairRate' });

export const QuoteBody = z
  .strictObject({
    from_currency: Ccy,
    to_currency: Ccy,
    amount: Decimal,
    direction: z.enum(['BUY', 'SELL']),
  })
  .meta({ id: 'FxQuoteRequest' });
export type QuoteBody = z.infer<typeof QuoteBody>;

export const QuoteResponse = z
  .object({
    quote_id: z.string(),
    from_currency: z.string(),
    to_currency: z.string(),
    amount: z.string(),
    direction: z.enum(['BUY', 'SELL']),
    rate: z.string(),
    mid_rate: z.string(),
    spread_bps: z.number().int(),
    fee: z.string().describe('In from_currency (SELL) or to_currency (BUY): the currency the customer pays in'),
    fee_currency: z.string(),
    display_rate: z.string(),
    display_rate_label: z.string(),
    to_currency_amount: z.string(),
    expires_at: z.string(),
    created_at: z.string(),
  })
  .meta({ id: 'FxQuote' });
export type QuoteResponse = z.infer<typeof QuoteResponse>;

export const SimulateRateBody = z.strictObject({ base: Ccy, quote: Ccy, rate: Decimal }).meta({ id: 'FxSimulateRateRequest' });
export type SimulateRateBody = z.infer<typeof SimulateRateBody>;

export const SimulatedRate = z.object({
  base: z.string(),
  quote: z.string(),
  rate: z.string(),
  inverse_rate: z.string(),
  timestamp: z.string(),
});

const Side = z.enum(['buy', 'sell']);
const OrderType = z.enum(['market', 'limit']);
export const OrderStatus = z.enum(['waiting_approval', 'pending', 'completed', 'cancelled', 'expired', 'rejected']);

export const CreateOrderBody = z
  .strictObject({
    customer_id: UuidParam.optional(),
    order_type: OrderType.optional(),
    pair: z.strictObject({ base: Ccy, quote: Ccy }).optional(),
    amount: Decimal.optional(),
    target_rate: Decimal.optional(),
    side: Side.optional(),
    source_type: z.enum(['account']).optional(),
    source_id: UuidParam.optional().describe("Default: the customer's newest active account in the currency the order pays"),
    destination_type: z
      .enum(['account', 'ssi'])
      .optional()
      .describe(
        "`account` (default) or `ssi`: a standing settlement instruction, an active external account of the customer in the currency the order receives. The proceeds pass through the customer's newest active account in that currency (a settlement account is opened for a customer who has none, shown as settlement_account_id) and are paid out to it (payout fee taken from them) when the order executes.",
      ),
    destination_id: UuidParam.optional().describe(
      "The account, or with `ssi` the external account (required then). Default: the customer's newest active account in the currency the order receives",
    ),
    quote_id: UuidParam.optional(),
  })
  .meta({ id: 'FxOrderRequest' });
export type CreateOrderBody = z.infer<typeof CreateOrderBody>;

export const OrderResponse = z
  .object({
    id: z.string(),
    order_id: z.string(),
    order_type: OrderType,
    side: Side,
    pair: z.object({ base: z.string(), quote: z.string() }),
    amount: z.string(),
    amount_currency: z.string(),
    converted_amount: z.string().optional().describe('Absent until the order executes'),
    converted_currency: z.string(),
    rate: z.string().optional().describe('Absent until the order executes'),
    mid_rate: z.string().nullable(),
    spread_bps: z.number().int(),
    target_rate: z.string().nullable(),
    fee: z.string().nullable(),
    fee_currency: z.string(),
    status: OrderStatus,
    customer_id: z.string().optional().describe('Absent for an order between accounts of the business itself'),
    tenant_id: z.string(),
    source_type: z.string(),
    source_id: z.string(),
    destination_type: z.string(),
    destination_id: z.string(),
    settlement_account_id: z
      .string()
      .optional()
      .describe("destination_type ssi: the customer's account the proceeds are credited to before they are paid out"),
    payout_transfer_id: z
      .string()
      .optional()
      .describe('destination_type ssi: the payout of the proceeds to the external account (GET /v1/transfers/{id}); absent until executed'),
    quote_id: z.string().nullable(),
    transaction_id: z.string().nullable(),
    created_by_user_id: z
      .string()
      .optional()
      .describe('The dashboard user who created the order; absent for an order made with an API key'),
    created_by_role: z.string().optional().describe("The creator's dashboard role, or `api_key`"),
    approved_by_user_id: z.string().nullable().describe('With approvals on (maker-checker): who approved the order'),
    approved_at: z.string().nullable(),
    rejected_by_user_id: z.string().nullable(),
    rejected_at: z.string().nullable(),
    rejection_reason: z.string().nullable(),
    executed_at: z.string().nullable(),
    settled_at: z.string().nullable(),
    expires_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string().nullable(),
  })
  .meta({ id: 'FxOrder' });
export type OrderResponse = z.infer<typeof OrderResponse>;

export const OrderIdParams = z.strictObject({ order_id: UuidParam });

export const ListOrdersQuery = PageQuery.extend({
  status: OrderStatus.optional(),
  order_type: OrderType.optional(),
  side: Side.optional(),
  customer_id: UuidParam.optional(),
  account_id: UuidParam.optional(),
  search: z.string().max(100).optional(),
}).strict();
export type ListOrdersQuery = z.infer<typeof ListOrdersQuery>;
