import { sql, type ColumnType, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { paginate, type Page, type PageQuery } from '../../db/pagination.js';
import { locked, scoped, scopedUpdate, type Lock } from '../../db/scoped.js';

type Json<T> = ColumnType<T, string | undefined, string>;

export type CaseStatus = 'init' | 'pending' | 'manual_review' | 'approved' | 'rejected';

export interface ComplianceCheck {
  check: 'age' | 'country' | 'duplicate' | 'sanctions' | 'document';
  subject: string;
  result: 'pass' | 'fail' | 'hit';
  detail?: unknown;
}

export interface KycCasesTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  level: 'basic' | 'intermediate';
  status: CaseStatus;
  connector: string;
  review_reason: string | null;
  reject_labels: Json<string[]>;
  reject_type: string | null;
  checks: Json<ComplianceCheck[]>;
  web_token_hash: Buffer | null;
  web_token_expires_at: Date | null;
  reviewed_at: Date | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

export interface KycDocumentsTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  doc_type: string;
  doc_sub_type: string | null;
  country: string;
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  number: string | null;
  issued_date: string | null;
  valid_until: string | null;
  dob: string | null;
  place_of_birth: string | null;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  content: Buffer;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    kyc_cases: KycCasesTable;
    kyc_documents: KycDocumentsTable;
  }
}

export type CaseRow = Selectable<KycCasesTable>;
export type DocumentMeta = Omit<Selectable<KycDocumentsTable>, 'content'>;

export async function insertCase(db: Queryable, row: Insertable<KycCasesTable>) {
  await db.insertInto('kyc_cases').values(row).execute();
}

export async function updateCase(db: Queryable, ctx: Scope, id: string, patch: Updateable<KycCasesTable>) {
  await scopedUpdate(db, 'kyc_cases', ctx)
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .execute();
}

export async function findCase(db: Queryable, ctx: Scope, customerId: string, level: string, lock?: Lock) {
  const q = scoped(db, 'kyc_cases', ctx)
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('level', '=', level as CaseRow['level']);
  return locked(q, lock).executeTakeFirst();
}

/** Every case of these customers (at most one per level each), most recently changed first. */
export async function casesOf(db: Queryable, ctx: Scope, customerIds: string[]): Promise<CaseRow[]> {
  if (customerIds.length === 0) return [];
  return casesOfQuery(db, ctx, customerIds).execute();
}

/** casesOf (of at least one customer) as a statement its caller sends (db/pipeline.ts). */
export const casesOfStatement = (db: Queryable, ctx: Scope, customerIds: string[]) => casesOfQuery(db, ctx, customerIds).compile();

const casesOfQuery = (db: Queryable, ctx: Scope, customerIds: string[]) =>
  scoped(db, 'kyc_cases', ctx).selectAll().where('customer_id', 'in', customerIds).orderBy('updated_at', 'desc').orderBy('id', 'desc');

export async function findCaseByTokenHash(db: Queryable, hash: Buffer) {
  return db.selectFrom('kyc_cases').selectAll().where('web_token_hash', '=', hash).executeTakeFirst();
}

export async function insertDocument(db: Queryable, row: Insertable<KycDocumentsTable>) {
  // Sent as base64 text and decoded by the server: PGlite serialises a large binary parameter
  // many times slower than base64 text; PostgreSQL is fast either way.
  const content = sql<Buffer>`decode(${row.content.toString('base64')}, 'base64')`;
  await db
    .insertInto('kyc_documents')
    .values({ ...row, content })
    .execute();
}

const META_COLUMNS = [
  'id',
  'tenant_id',
  'environment',
  'customer_id',
  'doc_type',
  'doc_sub_type',
  'country',
  'first_name',
  'middle_name',
  'last_name',
  'number',
  'issued_date',
  'valid_until',
  'dob',
  'place_of_birth',
  'filename',
  'content_type',
  'size_bytes',
  'sha256',
  'created_at',
] as const;

/** Document metadata only: the file bytes never leave the database through a list. */
export async function listDocuments(db: Queryable, ctx: Scope, customerId: string, query: PageQuery): Promise<Page<DocumentMeta>> {
  const base = scoped(db, 'kyc_documents', ctx).where('customer_id', '=', customerId);
  return paginate<DocumentMeta>(db, base, 'kyc_documents.id', query, (qb) => qb.select([...META_COLUMNS]));
}

/** Which document types (and sides) a customer has uploaded. */
export async function documentTypesOf(db: Queryable, ctx: Scope, customerId: string) {
  return scoped(db, 'kyc_documents', ctx)
    .select(['doc_type', 'doc_sub_type', 'number', 'country'])
    .distinct()
    .where('customer_id', '=', customerId)
    .execute();
}

/** Other customers of the business holding a document with this type, number and country. */
export async function customersWithDocumentNumber(
  db: Queryable,
  ctx: Scope,
  doc: { doc_type: string; number: string; country: string },
  exceptCustomerId: string,
): Promise<string[]> {
  const rows = await scoped(db, 'kyc_documents', ctx)
    .select('customer_id')
    .distinct()
    .where('doc_type', '=', doc.doc_type)
    .where('number', '=', doc.number)
    .where('country', '=', doc.country)
    .where('customer_id', '<>', exceptCustomerId)
    .limit(10)
    .execute();
  return rows.map((r) => r.customer_id);
}

/** Name and date of birth as printed on the customer's documents (where the client gave them). */
export async function documentIdentities(db: Queryable, ctx: Scope, customerId: string) {
  return scoped(db, 'kyc_documents', ctx)
    .select(['id', 'doc_type', 'first_name', 'last_name', 'dob'])
    .where('customer_id', '=', customerId)
    .where((eb) => eb.or([eb('dob', 'is not', null), eb('last_name', 'is not', null)]))
    .orderBy('id', 'desc')
    .limit(50)
    .execute();
}
