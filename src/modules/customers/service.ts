import type { Config } from '../../config.js';
import type { Lock } from '../../db/scoped.js';
import type { Queryable, Trx } from '../../db/client.js';
import { isUniqueViolation } from '../../db/errors.js';
import type { Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { customerExists } from './errors.js';
import type { Page } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import { newId } from '../../lib/ids.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';

export type { CustomerRow } from './repo.js';
import type { z } from 'zod';
import type { CreateCustomerBody, CustomerResponse, KycInfo, ListCustomersQuery, UpdateCustomerBody } from './schema.js';

/** Absent, never null, where the reference types the field as a string (docs/api-rules.md#absent-values). */
const OPTIONAL_CUSTOMER_FIELDS = [
  'first_name',
  'middle_name',
  'last_name',
  'business_name',
  'business_description',
  'business_type',
  'business_industry',
  'registration_number',
  'external_id',
] as const;

function toPersonResponse(p: repo.PersonRow): CustomerResponse['associated_persons'][number] {
  return omitNulls(
    {
      id: p.id,
      first_name: p.first_name,
      middle_name: p.middle_name,
      last_name: p.last_name,
      email: p.email,
      phone: p.phone,
      gender: p.gender,
      date_of_birth: p.date_of_birth,
      status: p.status,
      type: p.type,
      address: p.address,
      kyc_status: p.kyc_status,
      date_added: p.created_at.toISOString(),
    },
    ['middle_name'],
  );
}

export function toCustomerResponse(c: repo.CustomerRow, persons: repo.PersonRow[], kyc: CustomerResponse['kyc'] = []): CustomerResponse {
  return omitNulls(
    {
      id: c.id,
      type: c.type,
      status: c.status,
      email: c.email,
      phone: c.phone,
      first_name: c.first_name,
      middle_name: c.middle_name,
      last_name: c.last_name,
      gender: c.gender,
      date_of_birth: c.date_of_birth,
      business_name: c.business_name,
      business_description: c.business_description,
      business_type: c.business_type,
      business_industry: c.business_industry,
      registration_number: c.registration_number,
      external_id: c.external_id,
      address: c.address,
      kyc_status: c.kyc_status,
      kyc,
      associated_persons: persons.map(toPersonResponse),
      date_added: c.created_at.toISOString(),
      date_updated: c.updated_at.toISOString(),
    },
    OPTIONAL_CUSTOMER_FIELDS,
  );
}

async function assertNoDuplicate(
  db: Queryable,
  ctx: Scope,
  type: 'individual' | 'business',
  email: string | undefined,
  externalId: string | undefined,
  exceptId?: string,
) {
  const dup = await repo.findDuplicate(db, ctx, type, email, externalId, exceptId);
  if (!dup) return;
  const field = externalId && dup.external_id === externalId ? 'external_id' : 'email';
  throw customerExists(field, [{ field, code: 'duplicate', message: `Already used by customer ${dup.id}` }]);
}

/** Runs a write and turns a lost uniqueness race into the same 409 a pre-check gives. */
async function guardUnique<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isUniqueViolation(err)) throw customerExists('email or external_id');
    throw err;
  }
}

export async function createCustomer(trx: Trx, ctx: Scope, body: CreateCustomerBody): Promise<CustomerResponse> {
  await assertNoDuplicate(trx, ctx, body.type, body.email, body.external_id);
  const id = newId();
  const scope = { tenant_id: ctx.tenantId, environment: ctx.environment };
  const common = {
    id,
    ...scope,
    type: body.type,
    email: body.email,
    phone: body.phone,
    external_id: body.external_id ?? null,
    address: JSON.stringify(body.address),
  };
  await guardUnique(async () => {
    if (body.type === 'individual') {
      await repo.insertCustomer(trx, {
        ...common,
        first_name: body.first_name,
        middle_name: body.middle_name ?? null,
        last_name: body.last_name,
        gender: body.gender,
        date_of_birth: body.date_of_birth,
      });
    } else {
      await repo.insertCustomer(trx, {
        ...common,
        business_name: body.business_name,
        business_description: body.business_description,
        business_type: body.business_type,
        business_industry: body.business_industry,
        registration_number: body.registration_number,
      });
      for (const p of body.associated_persons) {
        await repo.insertPerson(trx, {
          id: newId(),
          ...scope,
          customer_id: id,
          first_name: p.first_name,
          middle_name: p.middle_name ?? null,
          last_name: p.last_name,
          email: p.email,
          phone: p.phone,
          gender: p.gender,
          date_of_birth: p.date_of_birth,
          address: JSON.stringify(p.address),
        });
      }
    }
  });
  // A new customer has no KYC case yet, so its answer carries no KYC information.
  const customer = toCustomerResponse((await repo.findCustomer(trx, ctx, id))!, await repo.personsOf(trx, [id]), undefined);
  await recordEvent(trx, ctx, 'customer.created', customer);
  return customer;
}

/**
 * What a customer answer and a customer update need from KYC. KYC is built on customers (it reads
 * and marks them), so the caller hands these in instead of this module importing KYC back.
 */
export interface KycView {
  infoFor(db: Queryable, ctx: Scope, customerIds: string[]): Promise<Map<string, z.infer<typeof KycInfo>[]>>;
  recheck(trx: Trx, ctx: Scope, customerId: string, config: Config): Promise<void>;
}

export async function getCustomer(db: Queryable, ctx: Scope, id: string, kyc: KycView): Promise<CustomerResponse> {
  const row = await repo.findCustomer(db, ctx, id);
  if (!row) throw notFound('Customer');
  const info = await kyc.infoFor(db, ctx, [id]);
  return toCustomerResponse(row, await repo.personsOf(db, [id]), info.get(id));
}

/** The customer row for other modules (KYC, accounts, cards): 404 when not this business's. */
export async function requireCustomer(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  const row = await repo.findCustomer(db, ctx, id, lock);
  if (!row) throw notFound('Customer');
  return row;
}

/** Which of `ids` are customers of this business and environment (one query for a batch). */
export function existingCustomerIds(db: Queryable, ctx: Scope, ids: string[]): Promise<Set<string>> {
  return repo.existingIds(db, ctx, ids);
}

export async function listCustomers(db: Queryable, ctx: Scope, query: ListCustomersQuery, kyc: KycView): Promise<Page<CustomerResponse>> {
  const page = await repo.listCustomers(db, ctx, query);
  const persons = await repo.personsOf(
    db,
    page.items.filter((c) => c.type === 'business').map((c) => c.id),
  );
  const info = await kyc.infoFor(
    db,
    ctx,
    page.items.map((c) => c.id),
  );
  return {
    ...page,
    items: page.items.map((c) =>
      toCustomerResponse(
        c,
        persons.filter((p) => p.customer_id === c.id),
        info.get(c.id),
      ),
    ),
  };
}

const INDIVIDUAL_ONLY = ['first_name', 'middle_name', 'last_name', 'gender', 'date_of_birth'] as const;
const BUSINESS_ONLY = [
  'business_name',
  'business_description',
  'business_type',
  'business_industry',
  'registration_number',
  'associated_persons',
] as const;
const NEW_PERSON_REQUIRED = ['first_name', 'last_name', 'email', 'phone', 'gender', 'date_of_birth', 'address'] as const;

/** PUT: the path decides the customer; only the fields sent change. */
export async function updateCustomer(trx: Trx, ctx: Scope, id: string, body: UpdateCustomerBody, kyc: KycView, config: Config) {
  const mismatch = (['customer_id', 'id'] as const).filter((f) => body[f] !== undefined && body[f] !== id);
  if (mismatch.length > 0) {
    throw new AppError(
      'validation_failed',
      'The customer id in the body differs from the path',
      mismatch.map((field) => ({ field, code: 'mismatch', message: 'Must equal the customer_id of the path' })),
    );
  }
  const current = await repo.findCustomer(trx, ctx, id, 'update');
  if (!current) throw notFound('Customer');

  const wrongType = (current.type === 'individual' ? BUSINESS_ONLY : INDIVIDUAL_ONLY).filter((f) => body[f] !== undefined);
  const personDetails = (body.associated_persons ?? []).flatMap((p, i) =>
    p.id
      ? []
      : NEW_PERSON_REQUIRED.filter((f) => p[f] === undefined).map((f) => ({
          field: `associated_persons.${i}.${f}`,
          code: 'required',
          message: 'Required for a new associated person',
        })),
  );
  if (wrongType.length > 0 || personDetails.length > 0) {
    throw new AppError('validation_failed', 'The request has invalid fields', [
      ...wrongType.map((field) => ({ field, code: 'not_allowed', message: `Not a field of a ${current.type} customer` })),
      ...personDetails,
    ]);
  }
  await assertNoDuplicate(trx, ctx, current.type, body.email, body.external_id, id);

  const { customer_id: _c, id: _i, associated_persons, address, ...fields } = body;
  await guardUnique(() => repo.updateCustomer(trx, ctx, id, { ...fields, ...(address ? { address: JSON.stringify(address) } : {}) }));
  for (const [i, p] of (associated_persons ?? []).entries()) {
    const { id: personId, address: personAddress, ...personFields } = p;
    const patch = { ...personFields, ...(personAddress ? { address: JSON.stringify(personAddress) } : {}) };
    if (personId) {
      if (!(await repo.updatePerson(trx, id, personId, patch))) {
        throw notFound('Associated person', [
          { field: `associated_persons.${i}.id`, code: 'not_found', message: 'No such associated person on this customer' },
        ]);
      }
    } else {
      await repo.insertPerson(trx, {
        id: newId(),
        tenant_id: ctx.tenantId,
        environment: ctx.environment,
        customer_id: id,
        first_name: p.first_name!,
        middle_name: p.middle_name ?? null,
        last_name: p.last_name!,
        email: p.email!,
        phone: p.phone!,
        gender: p.gender!,
        date_of_birth: p.date_of_birth!,
        address: JSON.stringify(personAddress),
      });
    }
  }
  // Compliance checks run again on every change: a hit sends an open or approved case to review.
  await kyc.recheck(trx, ctx, id, config);
  return getCustomer(trx, ctx, id, kyc);
}

/** KYC's single writer of the `kyc_status` columns (customer, and its associated persons). */
export async function setCustomerKycStatus(
  trx: Trx,
  ctx: Scope,
  customerId: string,
  kycStatus: string,
  personStatuses: { personId: string; kycStatus: string }[] = [],
): Promise<void> {
  await repo.setKycStatus(trx, ctx, customerId, kycStatus);
  for (const p of personStatuses) await repo.setPersonKycStatus(trx, customerId, p.personId, p.kycStatus);
}

/** Associated persons of a business customer (for KYC of the business). */
export async function associatedPersons(db: Queryable, customerId: string) {
  return repo.personsOf(db, [customerId]);
}

/** Ids of other customers with the same first name, last name and date of birth. */
export async function customersWithSameIdentity(
  db: Queryable,
  ctx: Scope,
  person: { firstName: string; lastName: string; dateOfBirth: string },
  exceptId: string,
): Promise<string[]> {
  return (await repo.findSameIdentity(db, ctx, person, exceptId)).map((r) => r.id);
}
