import { sql, type CompiledQuery } from 'kysely';
import type { Queryable } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { STALE_AFTER_SECONDS } from '../db/instance.js';

/** How long a claim holds its key before another request may take it over (the owner's heartbeat aside). */
const LEASE_SECONDS = 60;

/** One Idempotency-Key to claim for a request: its scope, the request's fingerprint, and the claim's token. */
export interface KeyClaim {
  tenantId: string;
  environment: string;
  key: string;
  fingerprint: string;
  token: string;
}

/**
 * The claim of Idempotency-Keys, for one request (idempotency.ts) or a batch (idempotency-batch.ts),
 * so a key claimed on one path is judged the same on the other. One statement: a key with no
 * record gets one; a record is taken over when its retention ended, or when it is an in-progress
 * claim of the same request whose lease ran out or whose owner process is gone (no heartbeat for
 * STALE_AFTER_SECONDS: killed, crashed). Returns the tokens of the keys claimed; any other key is
 * replayed, refused as reused, or answered "in progress" by the caller.
 *
 * Why not INSERT … ON CONFLICT: its speculative insertion writes a second WAL record (a confirm,
 * 48 bytes) for every new key. Here a new key is a plain insert. Concurrent claims of one new key
 * still have one winner: the second insert waits on the first one's index entry, and fails with a
 * unique violation of the primary key once the first commits (`isClaimRace`); the caller claims
 * again, and then finds the winner's record. An existing record is locked by the UPDATE, and
 * re-checked once its holder ends, as ON CONFLICT DO UPDATE did.
 */
export function claimKeys(db: Queryable, claims: KeyClaim[], owner: string, ttlHours: number): CompiledQuery<{ claim_token: string }> {
  const col = (f: (c: KeyClaim) => string) => claims.map(f);
  return sql<{ claim_token: string }>`
    with u (t, e, k, f, c) as (
      select * from unnest(${col((c) => c.tenantId)}::uuid[], ${col((c) => c.environment)}::text[], ${col((c) => c.key)}::text[],
                           ${col((c) => c.fingerprint)}::text[], ${col((c) => c.token)}::uuid[])
    ),
    taken as (
      update idempotency_keys r set
        fingerprint = u.f, state = 'in_progress', locked_until = now() + make_interval(secs => ${LEASE_SECONDS}),
        claim_token = u.c, owner_id = ${owner}::uuid, expires_at = now() + make_interval(hours => ${ttlHours}),
        response_status = null, response_body = null, response_sealed = false, created_at = now()
      from u
      where r.tenant_id = u.t and r.environment = u.e and r.key = u.k
        and (r.expires_at < now()
             or (r.state = 'in_progress' and r.fingerprint = u.f
                 and (r.locked_until < now()
                      or (r.owner_id <> ${owner}::uuid and not exists (
                            select 1 from process_instances p where p.id = r.owner_id
                              and p.heartbeat_at > now() - make_interval(secs => ${STALE_AFTER_SECONDS}))))))
      returning r.claim_token
    ),
    fresh as (
      insert into idempotency_keys (tenant_id, environment, key, fingerprint, state, locked_until, claim_token, owner_id, expires_at)
      select u.t, u.e, u.k, u.f, 'in_progress', now() + make_interval(secs => ${LEASE_SECONDS}), u.c, ${owner}::uuid,
        now() + make_interval(hours => ${ttlHours})
      from u
      where not exists (select 1 from idempotency_keys r where r.tenant_id = u.t and r.environment = u.e and r.key = u.k)
      returning claim_token
    )
    select claim_token from taken union all select claim_token from fresh`.compile(db);
}

/** A claim that lost the race for a new key to a claim committed after its statement began: claim again. */
export function isClaimRace(err: unknown): boolean {
  return isUniqueViolation(err, 'idempotency_keys_pkey');
}
