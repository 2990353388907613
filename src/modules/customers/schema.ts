import { z } from 'zod';
import { PageQuery } from '../../db/pagination.js';
import { Address, Email, Gender, NameText, PastDate, Phone, ShortText, UuidParam } from '../../lib/validators.js';

const PersonFields = {
  first_name: NameText,
  middle_name: NameText.optional(),
  last_name: NameText,
  email: Email,
  phone: Phone,
  gender: Gender,
  date_of_birth: PastDate,
  address: Address,
};

export const AssociatedPersonInput = z.strictObject(PersonFields).meta({ id: 'AssociatedPerson' });

export const IndividualCustomerInput = z.strictObject({
  type: z.literal('individual'),
  ...PersonFields,
  external_id: ShortText.optional(),
});

export const BusinessCustomerInput = z.strictObject({
  type: z.literal('business'),
  email: Email,
  phone: Phone,
  business_name: ShortText,
  business_description: z.string().trim().min(1).max(1000),
  business_type: ShortText,
  business_industry: ShortText,
  registration_number: ShortText,
  external_id: ShortText.optional(),
  address: Address,
  associated_persons: z.array(AssociatedPersonInput).min(1, 'A business needs at least one associated person').max(25),
});

export const CreateCustomerBody = z
  .discriminatedUnion('type', [IndividualCustomerInput, BusinessCustomerInput], {
    error: (issue) => (issue.code === 'invalid_union' ? 'type must be "individual" or "business"' : undefined),
  })
  .meta({ id: 'CreateCustomerRequest' });
export type CreateCustomerBody = z.infer<typeof CreateCustomerBody>;

export const UpdateAssociatedPersonInput = z.strictObject({
  id: UuidParam.optional(),
  first_name: NameText.optional(),
  middle_name: NameText.optional(),
  last_name: NameText.optional(),
  email: Email.optional(),
  phone: Phone.optional(),
  gender: Gender.optional(),
  date_of_birth: PastDate.optional(),
  address: Address.optional(),
});

export const UpdateCustomerBody = z
  .strictObject({
    customer_id: UuidParam.optional(),
    id: UuidParam.optional(),
    first_name: NameText.optional(),
    middle_name: NameText.optional(),
    last_name: NameText.optional(),
    email: Email.optional(),
    phone: Phone.optional(),
    gender: Gender.optional(),
    date_of_birth: PastDate.optional(),
    address: Address.optional(),
    business_name: ShortText.optional(),
    business_description: z.string().trim().min(1).max(1000).optional(),
    business_type: ShortText.optional(),
    business_industry: ShortText.optional(),
    registration_number: ShortText.optional(),
    external_id: ShortText.optional(),
    associated_persons: z.array(UpdateAssociatedPersonInput).max(25).optional(),
  })
  .meta({ id: 'UpdateCustomerRequest' });
export type UpdateCustomerBody = z.infer<typeof UpdateCustomerBody>;

export const KycInfo = z.object({
  id: z.string(),
  type: z.string(),
  status: z.string(),
  kyc_url: z.string().optional(),
  remark: z.string(),
  verified_at: z.string().nullable(),
});

const AddressOut = z.object({
  address_line1: z.string(),
  address_line2: z.string().optional(),
  city: z.string(),
  postal_code: z.string(),
  state: z.string(),
  country: z.string(),
});

export const AssociatedPersonResponse = z.object({
  id: z.string(),
  first_name: z.string(),
  middle_name: z.string().optional(),
  last_name: z.string(),
  email: z.string(),
  phone: z.string(),
  gender: z.string(),
  date_of_birth: z.string(),
  status: z.string(),
  type: z.string(),
  address: AddressOut,
  kyc_status: z.string(),
  date_added: z.string(),
});

export const CustomerResponse = z
  .object({
    id: z.string(),
    type: z.enum(['individual', 'business']),
    status: z.string(),
    email: z.string(),
    phone: z.string(),
    first_name: z.string().optional(),
    middle_name: z.string().optional(),
    last_name: z.string().optional(),
    gender: z.string().nullable(),
    date_of_birth: z.string().nullable(),
    business_name: z.string().optional(),
    business_description: z.string().optional(),
    business_type: z.string().optional(),
    business_industry: z.string().optional(),
    registration_number: z.string().optional(),
    industry_code: z.string().optional().describe('Absent: no industry code is kept'),
    external_id: z.string().optional(),
    address: AddressOut,
    kyc_status: z.string(),
    kyc: z.array(KycInfo),
    associated_persons: z.array(AssociatedPersonResponse),
    date_added: z.string(),
    date_updated: z.string(),
  })
  .meta({ id: 'Customer' });
export type CustomerResponse = z.infer<typeof CustomerResponse>;

export const CustomerIdParams = z.strictObject({ customer_id: UuidParam });

export const ListCustomersQuery = PageQuery.extend({
  email: z.string().max(254).optional(),
  status: z.enum(['active', 'inactive', 'blocked']).optional(),
  type: z.enum(['individual', 'business']).optional(),
  keyword: z.string().trim().min(1).max(100).optional(),
  kyc_status: z.enum(['not_started', 'init', 'pending', 'manual_review', 'approved', 'rejected']).optional(),
  sort: z.enum(['created_at DESC', 'created_at ASC', 'created_at desc', 'created_at asc']).optional(),
});
export type ListCustomersQuery = z.infer<typeof ListCustomersQuery>;
