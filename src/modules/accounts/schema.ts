import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { ShortText, UuidParam } from '../../lib/validators.js';

const Currency = z.string().regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 currency code such as USD');
/** The reference's crypto fields: accepted and ignored (docs/api-rules.md#unknown-fields). */
const BlockchainNetwork = z.enum(['polygon', 'stellar', 'ethereum', 'solana', 'avalanche']);

export const CreateAccountBody = z
  .strictObject({
    currency: Currency,
    type: z.enum(['regular', 'savings']).default('regular'),
    label: ShortText.max(50),
    customer_id: UuidParam.optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    blockchain_network: BlockchainNetwork.optional(),
    wallet_address: z.string().max(200).optional(),
  })
  .meta({ id: 'CreateAccountRequest' });
export type CreateAccountBody = z.infer<typeof CreateAccountBody>;

export const AccountStatus = z.enum(['active', 'frozen', 'deleted']);
export const UpdateAccountStatusBody = z.strictObject({ status: AccountStatus }).meta({ id: 'UpdateAccountStatusRequest' });

export const BankDetailsResponse = z.object({
  account_number: z.string(),
  account_name: z.string(),
  bank_name: z.string(),
  bank_code: z.string().nullable(),
  country: z.string(),
  routing_number: z.string().nullable(),
  sort_code: z.string().nullable(),
  iban: z.string().nullable(),
  bic: z.string().nullable(),
  clabe: z.string().nullable(),
  branch_code: z.string().nullable(),
});

export const AccountResponse = z
  .object({
    id: z.string(),
    label: z.string(),
    date_created: z.string(),
    date_updated: z.string(),
    type: z.string(),
    customer_id: z.string().optional().describe('Absent on an account of the business itself'),
    capabilities: z.array(z.string()),
    currency: z.string(),
    tenant_id: z.string(),
    tier: z.string().optional().describe('Absent: accounts have no pricing tier'),
    status: AccountStatus,
    category: z.string(),
    /** Posted balance. */
    balance: z.string(),
    /** Posted minus holds: what can be spent now. */
    available_balance: z.string(),
    is_tokenized: z.boolean(),
    account_number: z.string(),
    bank_details: BankDetailsResponse,
    virtual_account_bank_name: z.string(),
    virtual_account_bank_account_number: z.string(),
    virtual_account_bank_routing_number: z.string().optional().describe("Absent where the account's bank details have no routing number"),
    virtual_account_bank_beneficiary_name: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Account' });
export type AccountResponse = z.infer<typeof AccountResponse>;

export const AccountIdParams = z.strictObject({ account_id: UuidParam });

export const ListAccountsQuery = PageQuery.extend({
  customer_id: UuidParam.optional(),
  label: z.string().max(50).optional(),
  currency: Currency.optional(),
  status: AccountStatus.optional(),
  type: z.enum(['regular', 'savings']).optional(),
  blockchain_network: BlockchainNetwork.optional(),
});
export type ListAccountsQuery = z.infer<typeof ListAccountsQuery>;
