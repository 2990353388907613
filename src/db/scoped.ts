import type { Kysely, Selectable } from 'kysely';
import type { RequestContext } from '../core/context.js';
import type { Queryable } from './client.js';
import type { Database } from './types.js';

/** Tables keyed by business, environment and id: every resource table of the API. */
type ScopedTable = {
  [K in keyof Database]: Database[K] extends { id: unknown; tenant_id: unknown; environment: unknown } ? K : never;
}[keyof Database];

/**
 * One row of the caller's business and environment by id, optionally locked FOR UPDATE. The
 * scope is part of the lookup, so another business's (or environment's) id finds nothing and the
 * caller answers 404 without ever learning that it exists.
 */
export async function findScoped<T extends ScopedTable>(
  db: Queryable,
  table: T,
  scope: Pick<RequestContext, 'tenantId' | 'environment'>,
  id: string,
  forUpdate = false,
): Promise<Selectable<Database[T]> | undefined> {
  // Kysely cannot type column names across a generic table; ScopedTable guarantees these three.
  const untyped = db as unknown as Kysely<Record<string, { id: string; tenant_id: string; environment: string }>>;
  let query = untyped
    .selectFrom(table as string)
    .selectAll()
    .where('tenant_id', '=', scope.tenantId)
    .where('environment', '=', scope.environment)
    .where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return (await query.executeTakeFirst()) as Selectable<Database[T]> | undefined;
}
