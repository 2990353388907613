import { sql, type ColumnType, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page } from '../../db/pagination.js';
import type { Address } from '../../lib/validators.js';
import type { ListCustomersQuery } from './schema.js';
import { findScoped, scoped, scopedUpdate, type Lock } from '../../db/scoped.js';
import { escapeLike, stringConstant } from '../../db/values.js';
import { isUuid } from '../../lib/ids.js';

type JsonAddress = ColumnType<Address, string, string>;

export interface CustomersTable {
  id: string;
  tenant_id: string;
  environment: string;
  type: 'individual' | 'business';
  status: ColumnType<string, string | undefined, string>;
  email: string;
  phone: string;
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  gender: string | null;
  date_of_birth: string | null;
  business_name: string | null;
  business_description: string | null;
  business_type: string | null;
  business_industry: string | null;
  registration_number: string | null;
  external_id: string | null;
  address: JsonAddress;
  kyc_status: ColumnType<string, string | undefined, string>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export interface AssociatedPersonsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  type: ColumnType<string, string | undefined, string>;
  status: ColumnType<string, string | undefined, string>;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  email: string;
  phone: string;
  gender: string;
  date_of_birth: string;
  address: JsonAddress;
  kyc_status: ColumnType<string, string | undefined, string>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    customers: CustomersTable;
    associated_persons: AssociatedPersonsTable;
  }
}

export type CustomerRow = Selectable<CustomersTable>;
export type PersonRow = Selectable<AssociatedPersonsTable>;

export async function insertCustomer(db: Queryable, row: Insertable<CustomersTable>) {
  await db.insertInto('customers').values(row).execute();
}

export async function insertPerson(db: Queryable, row: Insertable<AssociatedPersonsTable>) {
  await db.insertInto('associated_persons').values(row).execute();
}

export async function findCustomer(db: Queryable, ctx: Scope, id: string, lock?: Lock) {
  return findScoped(db, 'customers', ctx, id, lock);
}

/** Which of `ids` are customers of the business and environment. */
export async function existingIds(db: Queryable, ctx: Scope, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await scoped(db, 'customers', ctx)
    .select('id')
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return new Set(rows.map((r) => r.id));
}

export async function personsOf(db: Queryable, customerIds: string[]): Promise<PersonRow[]> {
  if (customerIds.length === 0) return [];
  return db.selectFrom('associated_persons').selectAll().where('customer_id', 'in', customerIds).orderBy('id').execute();
}

export async function updateCustomer(db: Queryable, ctx: Scope, id: string, patch: Updateable<CustomersTable>) {
  await scopedUpdate(db, 'customers', ctx)
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

export async function updatePerson(db: Queryable, customerId: string, id: string, patch: Updateable<AssociatedPersonsTable>) {
  const result = await db
    .updateTable('associated_persons')
    .set({ ...patch, updated_at: new Date() })
    .where('customer_id', '=', customerId)
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Another customer of the same type with this email or external id, if any. */
export async function findDuplicate(
  db: Queryable,
  ctx: Scope,
  type: CustomersTable['type'],
  email: string | undefined,
  externalId: string | null | undefined,
  exceptId?: string,
) {
  if (!email && !externalId) return undefined;
  let q = scoped(db, 'customers', ctx)
    .select(['id', 'email', 'external_id'])
    .where((eb) =>
      eb.or([
        ...(email ? [eb.and([eb('type', '=', type), eb(sql`lower(email)`, '=', email.toLowerCase())])] : []),
        ...(externalId ? [eb('external_id', '=', externalId)] : []),
      ]),
    );
  if (exceptId) q = q.where('id', '<>', exceptId);
  return q.executeTakeFirst();
}

/** The text a keyword search looks in: the expression of the trigram index `customers_search_idx` (migration 1104), written the same. */
const SEARCH_TEXT = sql<string>`(coalesce(first_name, '') || ' ' || coalesce(last_name, '') || ' ' || email || ' ' || coalesce(business_name, ''))`;

export async function listCustomers(db: Queryable, ctx: Scope, query: ListCustomersQuery): Promise<Page<CustomerRow>> {
  let base = scoped(db, 'customers', ctx);
  if (query.email) base = base.where(sql`lower(email)`, '=', query.email.toLowerCase());
  if (query.status) base = base.where('status', '=', query.status);
  if (query.type) base = base.where('type', '=', query.type);
  if (query.kyc_status) base = base.where('kyc_status', '=', query.kyc_status);
  if (query.keyword) {
    // A keyword matches inside the names or the email (or is the customer's id). The trigram index
    // on SEARCH_TEXT (migration 1104) finds the few customers whose text holds a rare keyword
    // without reading the business's others; the per-column tests keep the match exactly as
    // before (a keyword that spans two columns in SEARCH_TEXT is not a match). The pattern is a
    // constant of the statement (db/values.ts): as a parameter, a prepared statement's generic
    // plan would walk every customer of the business, newest first, for a rare keyword.
    const like = stringConstant(`%${escapeLike(query.keyword)}%`);
    const id = isUuid(query.keyword) ? query.keyword.toLowerCase() : undefined;
    base = base.where((eb) => {
      const text = eb.and([
        eb(SEARCH_TEXT, 'ilike', like),
        eb.or([
          eb('first_name', 'ilike', like),
          eb('last_name', 'ilike', like),
          eb('email', 'ilike', like),
          eb('business_name', 'ilike', like),
        ]),
      ]);
      return id ? eb.or([text, eb('id', '=', id)]) : text;
    });
  }
  const order = query.sort?.toLowerCase().endsWith('asc') ? 'asc' : 'desc';
  return paginate<CustomerRow>(db, base, 'customers.id', query, (qb) => qb.selectAll(), order);
}

/** KYC keeps the customer's and its associated persons' `kyc_status` columns in sync. */
export async function setKycStatus(db: Queryable, ctx: Scope, id: string, kycStatus: string) {
  await scopedUpdate(db, 'customers', ctx).set({ kyc_status: kycStatus, updated_at: new Date() }).where('id', '=', id).execute();
}

export async function setPersonKycStatus(db: Queryable, customerId: string, personId: string, kycStatus: string) {
  await db
    .updateTable('associated_persons')
    .set({ kyc_status: kycStatus, updated_at: new Date() })
    .where('customer_id', '=', customerId)
    .where('id', '=', personId)
    .execute();
}

/** Other individual customers of the business with this name and date of birth (identity duplicates). */
export async function findSameIdentity(
  db: Queryable,
  ctx: Scope,
  person: { firstName: string; lastName: string; dateOfBirth: string },
  exceptId: string,
) {
  return scoped(db, 'customers', ctx)
    .select(['id'])
    .where('date_of_birth', '=', person.dateOfBirth)
    .where(sql`lower(last_name)`, '=', person.lastName.toLowerCase())
    .where(sql`lower(first_name)`, '=', person.firstName.toLowerCase())
    .where('id', '<>', exceptId)
    .limit(10)
    .execute();
}
