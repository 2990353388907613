import type { Db, Queryable, Trx } from '../../db/client.js';
import type { Environment, KeyLookup } from '../../core/context.js';
import { BusinessSettingsStrict, issuesOf, parseBusinessSettings, type BusinessSettings } from '../../core/settings.js';
import { constantTimeEqual, randomBase62, sha256 } from '../../lib/crypto.js';
import { newId } from '../../lib/ids.js';
import * as repo from './repo.js';

export const ENVIRONMENTS: readonly Environment[] = ['sandbox', 'live'];
/** 43 base62 characters = 256 bits of randomness. */
const KEY_RANDOM_CHARS = 43;

export interface KeyPair {
  public_key: string;
  secret_key: string;
}

export interface CreatedTenant {
  tenant_id: string;
  sandbox: KeyPair;
  live: KeyPair;
}

/** Shown for a stored key after creation: never the whole secret. */
export function maskKey(prefix: string, last4: string): string {
  return `${prefix}…${last4}`;
}

async function createKeyPair(db: Queryable, tenantId: string, environment: Environment): Promise<KeyPair> {
  const pairId = newId();
  const pair = {} as KeyPair;
  for (const kind of ['public', 'secret'] as const) {
    const prefix = `${kind === 'secret' ? 'sk' : 'pk'}_${environment}_`;
    const key = prefix + randomBase62(KEY_RANDOM_CHARS);
    await repo.insertKey(db, {
      id: newId(),
      tenant_id: tenantId,
      environment,
      kind,
      key_hash: sha256(key),
      prefix,
      last4: key.slice(-4),
      pair_id: pairId,
      expires_at: null,
      revoked_at: null,
    });
    pair[kind === 'secret' ? 'secret_key' : 'public_key'] = key;
  }
  return pair;
}

/** A business with both key pairs, in the caller's transaction (the CLI, start-up, dashboard sign-up). */
export async function createTenant(trx: Trx, name: string): Promise<CreatedTenant> {
  const tenantId = newId();
  await repo.insertTenant(trx, tenantId, name);
  const sandbox = await createKeyPair(trx, tenantId, 'sandbox');
  const live = await createKeyPair(trx, tenantId, 'live');
  return { tenant_id: tenantId, sandbox, live };
}

export const ROTATION_EXPIRY_SECONDS = [0, 3600, 86_400, 604_800] as const;

/**
 * Replaces the environment's key pair. The old pair keeps working until `expireInSeconds` from
 * now (0 = at once). The new secret key is returned here and never again.
 */
export async function rotateKeys(
  trx: Trx,
  tenantId: string,
  environment: Environment,
  expireInSeconds: number,
): Promise<KeyPair & { old_keys_expire_at: string }> {
  const at = new Date(Date.now() + expireInSeconds * 1000);
  await repo.expireKeys(trx, tenantId, environment, at);
  const pair = await createKeyPair(trx, tenantId, environment);
  return { ...pair, old_keys_expire_at: at.toISOString() };
}

const KEY_SHAPE = /^(sk|pk)_(sandbox|live)_[0-9A-Za-z]{20,100}$/;

export async function lookupKey(db: Queryable, key: string, now = new Date()): Promise<KeyLookup> {
  if (!KEY_SHAPE.test(key)) return { ok: false, reason: 'invalid' };
  const hash = sha256(key);
  const row = await repo.findKeyByHash(db, hash);
  if (!row || !constantTimeEqual(row.key_hash, hash) || row.revoked_at) return { ok: false, reason: 'invalid' };
  if (row.expires_at && row.expires_at <= now) return { ok: false, reason: 'expired' };
  return {
    ok: true,
    tenantId: row.tenant_id,
    environment: row.environment,
    kind: row.kind,
    settings: parseBusinessSettings(row.settings, row.tenant_id),
    expiresAt: row.expires_at,
    liveFrozen: row.environment === 'live' && row.live_frozen_at !== null,
  };
}

export async function listKeys(db: Queryable, tenantId: string, environment: Environment) {
  const rows = await repo.listLiveKeys(db, tenantId, environment);
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    masked: maskKey(r.prefix, r.last4),
    created_at: r.created_at.toISOString(),
    expires_at: r.expires_at ? r.expires_at.toISOString() : null,
  }));
}

export async function getTenant(db: Queryable, tenantId: string) {
  return repo.findTenant(db, tenantId);
}

export async function countTenants(db: Queryable) {
  return repo.countTenants(db);
}

/** Businesses in id order after `after`, with their settings: for sweeps over every business. */
export async function pageOfTenants(db: Queryable, after: string | null, limit: number) {
  return repo.pageOfTenants(db, after, limit);
}

/** A business's settings, parsed (a business that does not exist has none). */
export async function settingsOf(db: Queryable, tenantId: string): Promise<BusinessSettings> {
  return parseBusinessSettings((await repo.findTenant(db, tenantId))?.settings, tenantId);
}

/** Refused settings: what is wrong, by key (values are not repeated). */
export class InvalidSettings extends Error {}

/**
 * Merges settings (fees, limits, quotas; an undefined value removes its key) into the business's
 * settings. The result is checked against the one schema, unknown keys refused, before it is
 * stored: a typo fails here, not at the business's next request.
 */
export async function setSettings(db: Db, tenantId: string, patch: repo.TenantSettings): Promise<BusinessSettings> {
  const tenant = await repo.findTenant(db, tenantId);
  if (!tenant) throw new Error(`No business ${tenantId}`);
  const merged = BusinessSettingsStrict.safeParse({ ...tenant.settings, ...patch });
  if (!merged.success) throw new InvalidSettings(`Invalid settings: ${issuesOf(merged.error)}`);
  await repo.updateSettings(db, tenantId, merged.data);
  return merged.data;
}
