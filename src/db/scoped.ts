import type {
  DeleteQueryBuilder,
  DeleteResult,
  Kysely,
  Selectable,
  SelectQueryBuilder,
  Updateable,
  UpdateQueryBuilder,
  UpdateResult,
} from 'kysely';
import type { Scope } from '../core/context.js';
import type { Queryable } from './client.js';
import type { Database } from './types.js';

/**
 * The one name of the row-lock option: `'update'` (FOR UPDATE, before changing the row) or
 * `'share'` (FOR SHARE, to keep it from changing while the transaction depends on it).
 */
export type Lock = 'update' | 'share';

/** Tables of one business and environment: every resource table of the API. */
export type TenantTable = {
  [K in keyof Database]: Database[K] extends { tenant_id: unknown; environment: unknown } ? K : never;
}[keyof Database];

/** Tenant tables keyed by id. */
export type ScopedTable = {
  [K in TenantTable]: Database[K] extends { id: unknown } ? K : never;
}[TenantTable];

/** Tenant tables keyed by id with a status column. */
export type StatusTable = {
  [K in ScopedTable]: Database[K] extends { status: unknown } ? K : never;
}[ScopedTable];

// Kysely cannot type column names across a generic table; TenantTable guarantees these columns,
// and each function hands back the builder typed for the caller's concrete table.
type Untyped = Kysely<Record<string, { id: string; tenant_id: string; environment: string; status: string }>>;
const untyped = (db: Queryable) => db as unknown as Untyped;
const column = (table: string, name: 'tenant_id' | 'environment') => `${table}.${name}` as typeof name;

/** Whose rows (a request's `Scope`, or a job's row's tenant and environment). */
type Owner = Pick<Scope, 'tenantId'> & { environment: string };

/**
 * `select … from table where tenant_id = … and environment = …`: the start of every query of a
 * business's rows. The columns are qualified by the table, so joins stay unambiguous. Another
 * business's (or environment's) id simply finds nothing, and the caller answers 404 without ever
 * learning that it exists.
 */
export function scoped<T extends TenantTable>(db: Queryable, table: T, scope: Owner): SelectQueryBuilder<Database, T, object> {
  return untyped(db)
    .selectFrom(table as string)
    .where(column(table, 'tenant_id'), '=', scope.tenantId)
    .where(column(table, 'environment'), '=', scope.environment) as unknown as SelectQueryBuilder<Database, T, object>;
}

/** `update table … where tenant_id = … and environment = …`. */
export function scopedUpdate<T extends TenantTable>(
  db: Queryable,
  table: T,
  scope: Owner,
): UpdateQueryBuilder<Database, T, T, UpdateResult> {
  return untyped(db)
    .updateTable(table as string)
    .where(column(table, 'tenant_id'), '=', scope.tenantId)
    .where(column(table, 'environment'), '=', scope.environment) as unknown as UpdateQueryBuilder<Database, T, T, UpdateResult>;
}

/** `delete from table where tenant_id = … and environment = …`. */
export function scopedDelete<T extends TenantTable>(db: Queryable, table: T, scope: Owner): DeleteQueryBuilder<Database, T, DeleteResult> {
  return untyped(db)
    .deleteFrom(table as string)
    .where(column(table, 'tenant_id'), '=', scope.tenantId)
    .where(column(table, 'environment'), '=', scope.environment) as unknown as DeleteQueryBuilder<Database, T, DeleteResult>;
}

/** Applies the lock option to a select (none when `lock` is undefined). */
export function locked<Q extends { forUpdate(): Q; forShare(): Q }>(query: Q, lock: Lock | undefined): Q {
  if (lock === 'update') return query.forUpdate();
  if (lock === 'share') return query.forShare();
  return query;
}

/** One row of the caller's business and environment by id, optionally locked (`lock`). */
export async function findScoped<T extends ScopedTable>(
  db: Queryable,
  table: T,
  scope: Owner,
  id: string,
  lock?: Lock,
): Promise<Selectable<Database[T]> | undefined> {
  const query = untyped(db)
    .selectFrom(table as string)
    .selectAll()
    .where('tenant_id', '=', scope.tenantId)
    .where('environment', '=', scope.environment)
    .where('id', '=', id);
  return (await locked(query, lock).executeTakeFirst()) as Selectable<Database[T]> | undefined;
}

/**
 * A guarded status change: `update table set status = next, … where id = … and status in (from)
 * returning *`, within the scope. Exactly one of two racing transitions wins; the loser (or a
 * row already past `from`) gets undefined and answers `invalid_state_transition` itself.
 */
export async function transition<T extends StatusTable>(
  db: Queryable,
  table: T,
  scope: Owner,
  id: string,
  from: string | readonly string[],
  set: Updateable<Database[T]>,
): Promise<Selectable<Database[T]> | undefined> {
  const statuses = typeof from === 'string' ? [from] : [...from];
  return (await untyped(db)
    .updateTable(table as string)
    .set(set as never)
    .where('tenant_id', '=', scope.tenantId)
    .where('environment', '=', scope.environment)
    .where('id', '=', id)
    .where('status', 'in', statuses)
    .returningAll()
    .executeTakeFirst()) as Selectable<Database[T]> | undefined;
}
