import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { isCountry, isStateOf } from '../../lib/countries.js';
import { findInstitution } from '../../lib/institutions.js';
import {
  checkMobileMoneyNumber,
  isSepaIban,
  isValidAbaRouting,
  isValidBic,
  isValidFpsAccountNumber,
  isValidNuban,
  normalizeIban,
  normalizeSortCode,
} from '../../lib/payee-validation.js';
import { CountryCode, UuidParam } from '../../lib/validators.js';

const Text = (max: number) => z.string().trim().min(1, 'Must not be empty').max(max);

/** The reference's ExtRecipientAddress: state optional, but when given it must be ISO 3166-2 of the country. */
export const PayeeAddress = z
  .strictObject({
    address_line1: Text(200),
    address_line2: z.string().trim().max(200).optional(),
    house_building_number: z.string().trim().max(50).optional(),
    city: Text(100),
    postal_code: Text(20),
    state: z.string().trim().optional(),
    country: CountryCode,
  })
  .superRefine((a, ctx) => {
    if (a.state !== undefined && isCountry(a.country) && !isStateOf(a.state, a.country)) {
      ctx.addIssue({ code: 'custom', path: ['state'], message: `Must be an ISO 3166-2 subdivision of ${a.country} (e.g. ${a.country}-…)` });
    }
  })
  .meta({ id: 'PayeeAddress' });
export type PayeeAddress = z.infer<typeof PayeeAddress>;

const OwnerType = z.enum(['individual', 'business']);
const Base = {
  customer_id: UuidParam,
  account_name: Text(100),
  bank_name: Text(100).optional(),
};
const Digits = (min: number, max: number, what: string) =>
  z
    .string()
    .trim()
    .regex(new RegExp(`^\\d{${min},${max}}$`), `${what} must be ${min === max ? min : `${min}-${max}`} digits`);

const AchWire = z.strictObject({
  ...Base,
  payee_type: z.literal('ach_wire'),
  account_number: Digits(4, 17, 'account_number'),
  routing_number: z.string().trim().refine(isValidAbaRouting, 'Must be a valid 9-digit ABA routing number'),
  account_owner_type: OwnerType,
  account_type: z.enum(['savings', 'checking']),
  currency: z.literal('USD'),
  address: PayeeAddress,
  payment_rail: z.enum(['ach', 'wire']).nullable().optional(),
});

const Iban = z
  .string()
  .max(50)
  .refine((s) => normalizeIban(s) !== undefined, 'Must be a valid IBAN')
  .transform((s) => normalizeIban(s) as string);

const Bic = z
  .string()
  .trim()
  .transform((s) => s.toUpperCase())
  .refine(isValidBic, 'Must be a valid BIC (8 or 11 characters, e.g. DEUTDEFF)');

const Sepa = z.strictObject({
  ...Base,
  payee_type: z.literal('sepa'),
  account_owner_type: OwnerType,
  iban: Iban.refine(isSepaIban, 'Must be the IBAN of a SEPA country'),
  bic: Bic.optional(),
  currency: z.literal('EUR'),
  address: PayeeAddress,
});

const Swift = z
  .strictObject({
    ...Base,
    payee_type: z.literal('swift'),
    account_owner_type: OwnerType,
    account_number: Text(34)
      .regex(/^[A-Za-z0-9]+$/, 'Letters and digits only')
      .optional(),
    iban: Iban.optional(),
    bic: Bic,
    currency: z.enum(['USD', 'EUR', 'GBP']),
    address: PayeeAddress,
  })
  .superRefine((b, ctx) => {
    if (!b.account_number && !b.iban) ctx.addIssue({ code: 'custom', path: ['account_number'], message: 'Give account_number or iban' });
  });

const Fps = z.strictObject({
  ...Base,
  payee_type: z.literal('fps'),
  account_number: z.string().trim().refine(isValidFpsAccountNumber, 'Must be an 8-digit UK account number'),
  sort_code: z
    .string()
    .refine((s) => normalizeSortCode(s) !== undefined, 'Must be a 6-digit sort code (e.g. 20-00-00)')
    .transform((s) => normalizeSortCode(s) as string),
  account_owner_type: OwnerType.optional(),
  currency: z.literal('GBP'),
  address: PayeeAddress.optional(),
});

const BankAccount = z
  .strictObject({
    ...Base,
    payee_type: z.literal('bank_account'),
    account_number: Text(50)
      .regex(/^[A-Za-z0-9]+$/, 'Letters and digits only')
      .optional(),
    iban: Iban.optional(),
    institution_id: UuidParam,
    currency: z.string(),
    account_owner_type: OwnerType.optional(),
    address: PayeeAddress.optional(),
  })
  .superRefine((b, ctx) => {
    const inst = findInstitution(b.institution_id);
    if (!inst || inst.type !== 'bank') {
      ctx.addIssue({ code: 'custom', path: ['institution_id'], message: 'Not a bank from GET /v1/external-accounts/institutions' });
      return;
    }
    if (b.currency !== inst.currency) ctx.addIssue({ code: 'custom', path: ['currency'], message: `${inst.name} takes ${inst.currency}` });
    if (inst.accountNumberType === 'iban' && !b.iban)
      ctx.addIssue({ code: 'custom', path: ['iban'], message: `${inst.name} needs an iban` });
    if (inst.accountNumberType !== 'iban' && !b.account_number) {
      ctx.addIssue({ code: 'custom', path: ['account_number'], message: 'Required' });
    }
    if (inst.country === 'NG' && b.account_number && !isValidNuban(inst.code, b.account_number)) {
      ctx.addIssue({ code: 'custom', path: ['account_number'], message: `Not a valid 10-digit NUBAN at ${inst.name}` });
    }
  });

const MobileMoney = z
  .strictObject({
    ...Base,
    payee_type: z.literal('mobile_money'),
    phone_number: z.string().trim(),
    institution_id: UuidParam,
    currency: z.string(),
  })
  .superRefine((b, ctx) => {
    const inst = findInstitution(b.institution_id);
    if (!inst || inst.type !== 'mobile_money') {
      ctx.addIssue({
        code: 'custom',
        path: ['institution_id'],
        message: 'Not a mobile money operator from GET /v1/external-accounts/institutions',
      });
      return;
    }
    if (b.currency !== inst.currency) ctx.addIssue({ code: 'custom', path: ['currency'], message: `${inst.name} takes ${inst.currency}` });
    const check = checkMobileMoneyNumber(b.phone_number, inst.country, inst.prefixes);
    if (!check.ok) ctx.addIssue({ code: 'custom', path: ['phone_number'], message: check.reason });
  });

export const CreateExternalAccountBody = z
  .discriminatedUnion('payee_type', [AchWire, Sepa, Swift, Fps, BankAccount, MobileMoney], {
    error: (issue) =>
      issue.code === 'invalid_union' ? 'payee_type must be one of ach_wire, sepa, swift, fps, bank_account, mobile_money' : undefined,
  })
  .meta({ id: 'AddExternalAccountRequest' });
export type CreateExternalAccountBody = z.infer<typeof CreateExternalAccountBody>;

export const ExternalAccountStatus = z.enum(['pending', 'active', 'failed']);

export const ExternalAccountResponse = z
  .object({
    id: z.string(),
    customer_id: z.string(),
    payee_type: z.enum(['ach_wire', 'sepa', 'swift', 'bank_account', 'mobile_money', 'fps']),
    account_number: z.string().nullable(),
    iban: z.string().nullable(),
    bic: z.string().nullable(),
    routing_number: z.string().nullable(),
    sort_code: z.string().nullable(),
    account_name: z.string(),
    bank_name: z.string().nullable(),
    institution_name: z.string().nullable(),
    institution_id: z.string().nullable(),
    institution_type: z
      .enum(['bank', 'mobile_money'])
      .optional()
      .describe('Absent for payees without an institution (ACH/wire, SEPA, SWIFT, FPS)'),
    institution_country_iso_code: z.string().nullable(),
    currency: z.string(),
    phone_number: z.string().nullable(),
    account_owner_type: z.string().nullable(),
    account_type: z.string().nullable(),
    payment_rail: z.string().nullable(),
    address: PayeeAddress.optional(),
    status: ExternalAccountStatus,
    approval_status: z
      .enum(['waiting_approval', 'approved', 'rejected', 'expired'])
      .optional()
      .describe(
        'With approvals on for new payees (maker-checker): the payee stays pending, unusable for payouts, until approved in the dashboard. Absent otherwise.',
      ),
    failure_reason: z.string().nullable(),
    date_created: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'ExternalAccount' });
export type ExternalAccountResponse = z.infer<typeof ExternalAccountResponse>;

export const ExternalAccountIdParams = z.strictObject({ external_account_id: UuidParam });

export const ListExternalAccountsQuery = PageQuery.extend({
  customer_id: UuidParam.optional(),
  status: ExternalAccountStatus.optional(),
  payee_type: z.enum(['ach_wire', 'sepa', 'swift', 'bank_account', 'mobile_money', 'fps']).optional(),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 code')
    .optional(),
});
export type ListExternalAccountsQuery = z.infer<typeof ListExternalAccountsQuery>;

export const InstitutionsQuery = z.object({
  page: z.coerce.number().int().min(1).max(100_000).default(1),
  items_per_page: z.coerce.number().int().min(1).max(100).default(20),
  country_iso_code: CountryCode.optional(),
  institution_type: z.enum(['bank', 'mobile_money']).optional(),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/, 'Must be an ISO 4217 code')
    .optional(),
});

export const InstitutionItem = z
  .object({
    id: z.string(),
    name: z.string(),
    code: z.string(),
    country_iso_code: z.string(),
    currency: z.string(),
    account_number_type: z.enum(['bank_account_number', 'iban', 'phone_number', 'clabe']),
    min_amount: z.string(),
    max_amount: z.string(),
    logo_url: z.string().nullable(),
    institution_type: z.enum(['bank', 'mobile_money']),
  })
  .meta({ id: 'PayeeInstitution' });

export const VerifyExternalAccountBody = z
  .strictObject({
    account_number: z.string().trim().max(50).nullable().optional(),
    institution_id: UuidParam.nullable().optional(),
    phone: z.string().trim().max(20).nullable().optional(),
    iban: z.string().trim().max(50).nullable().optional(),
    bic: z.string().trim().max(11).nullable().optional(),
    clabe: z.string().trim().max(18).nullable().optional(),
    routing_number: z.string().trim().max(20).nullable().optional(),
    country_code: CountryCode.nullable().optional(),
    account_owner_type: OwnerType.nullable().optional(),
  })
  .meta({ id: 'VerifyExternalAccountRequest' });
export type VerifyExternalAccountBody = z.infer<typeof VerifyExternalAccountBody>;

export const VerifyExternalAccountResponse = z.object({
  is_verified: z.boolean(),
  account_name: z.string().nullable(),
  account_number: z.string(),
  account_status: z.enum(['active', 'inactive', 'blocked']).nullable(),
  account_type: z.string().nullable(),
  bank_name: z.string().nullable(),
  bank_code: z.string().nullable(),
  institutions: z.array(InstitutionItem).nullable(),
});
