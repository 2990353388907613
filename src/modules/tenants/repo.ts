import type { ColumnType, Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Environment } from '../../core/context.js';
import { scoped, scopedUpdate } from '../../db/scoped.js';

export interface TenantsTable {
  id: string;
  name: string;
  settings: ColumnType<TenantSettings, string | undefined, string>;
  created_at: ColumnType<Date, never, never>;
  /** Set by an operator (console at /ops): the live keys answer 403 live_access_frozen until lifted. */
  live_frozen_at: Date | null;
  live_frozen_reason: string | null;
}

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  environment: Environment;
  kind: 'secret' | 'public';
  key_hash: Buffer;
  prefix: string;
  last4: string;
  pair_id: string;
  created_at: ColumnType<Date, never, never>;
  expires_at: Date | null;
  revoked_at: Date | null;
}

/** Per-business overrides of configuration defaults; other modules read their own keys. */
export type TenantSettings = Record<string, unknown>;

declare module '../../db/types.js' {
  interface Database {
    tenants: TenantsTable;
    api_keys: ApiKeysTable;
  }
}

export type ApiKeyRow = Selectable<ApiKeysTable>;

export async function insertTenant(db: Queryable, id: string, name: string): Promise<void> {
  await db.insertInto('tenants').values({ id, name }).execute();
}

export async function findTenant(db: Queryable, id: string) {
  return db.selectFrom('tenants').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countTenants(db: Queryable): Promise<number> {
  const row = await db
    .selectFrom('tenants')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of businesses by id (background sweeps walk every business with it). */
export async function pageOfTenants(db: Queryable, after: string | null, limit: number) {
  let q = db.selectFrom('tenants').select(['id', 'settings']).orderBy('id').limit(limit);
  if (after) q = q.where('id', '>', after);
  return q.execute();
}

export async function updateSettings(db: Queryable, id: string, settings: TenantSettings): Promise<void> {
  await db
    .updateTable('tenants')
    .set({ settings: JSON.stringify(settings) })
    .where('id', '=', id)
    .execute();
}

export async function insertKey(db: Queryable, row: Omit<ApiKeyRow, 'created_at'>): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

export async function findKeyByHash(db: Queryable, hash: Buffer) {
  return db
    .selectFrom('api_keys')
    .innerJoin('tenants', 'tenants.id', 'api_keys.tenant_id')
    .select([
      'api_keys.id',
      'api_keys.tenant_id',
      'api_keys.environment',
      'api_keys.kind',
      'api_keys.key_hash',
      'api_keys.expires_at',
      'api_keys.revoked_at',
      'tenants.settings',
      'tenants.live_frozen_at',
    ])
    .where('api_keys.key_hash', '=', hash)
    .executeTakeFirst();
}

/** Keys of one environment still in use (not revoked, not expired), newest first. */
export async function listLiveKeys(db: Queryable, tenantId: string, environment: Environment) {
  return scoped(db, 'api_keys', { tenantId, environment })
    .selectAll()
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date())]))
    .orderBy('created_at', 'desc')
    .execute();
}

/** Sets the expiry of every current key of the environment (rotation): the old pair ends then. */
export async function expireKeys(db: Queryable, tenantId: string, environment: Environment, at: Date) {
  await scopedUpdate(db, 'api_keys', { tenantId, environment })
    .set({ expires_at: at })
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', at)]))
    .execute();
}
