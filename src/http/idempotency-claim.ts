import { sql, type CompiledQuery } from 'kysely';
import type { Queryable } from '../db/client.js';
import { compiledPerShape } from '../db/compiled.js';
import { isUniqueViolation } from '../db/errors.js';
import { onGenericPlan } from '../db/generic-plan.js';
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

/** The arrays of a set of claims, as unnest's arguments: scope, fingerprint, token. */
const arraysOf = (claims: KeyClaim[]) =>
  [
    claims.map((c) => c.tenantId),
    claims.map((c) => c.environment),
    claims.map((c) => c.key),
    claims.map((c) => c.fingerprint),
    claims.map((c) => c.token),
  ] as const;
type ClaimArrays = ReturnType<typeof arraysOf>;

/** The arrays in unnest's argument list, typed. */
const unnestArgs = ([t, e, k, f, c]: ClaimArrays) => sql`${t}::uuid[], ${e}::text[], ${k}::text[], ${f}::text[], ${c}::uuid[]`;

/**
 * The advisory lock of one key, as both paths take it (same text, same hash): a 64-bit hash of
 * the business, the environment and the key. Two keys sharing a hash only wait on each other.
 */
const keyLock = (t: string, e: string, k: string) =>
  sql`hashtextextended('idempotency:' || ${sql.ref(t)}::text || ':' || ${sql.ref(e)} || ':' || ${sql.ref(k)}, 0)`;

/**
 * The keys' advisory locks, held until the transaction ends, taken in hash order (two batches
 * sharing keys cannot deadlock on them). A batch sends this before `claimBatchKeys`: that later
 * statement's snapshot is taken once every lock is held, so it sees every record committed by a
 * holder before.
 */
export function lockKeys(db: Queryable, claims: KeyClaim[]): CompiledQuery<unknown> {
  const [t, e, k] = arraysOf(claims);
  return lockKeysOnce(db, t, e, k);
}

// The statements of a claim are built and compiled by Kysely once (db/compiled.ts): a batch only
// fills in its arrays, the owner and the retention.
const lockKeysOnce = compiledPerShape(
  (_db: Queryable, t: string[], e: string[], k: string[]) => sql`
    select pg_advisory_xact_lock(h) from (
      select distinct ${keyLock('u.t', 'u.e', 'u.k')} as h
      from unnest(${t}::uuid[], ${e}::text[], ${k}::text[]) as u(t, e, k)
      order by h) s`,
  (t, e, k) => ({ shape: 'lock', parameters: [t, e, k] }),
);

/** A record may be taken over: its retention ended, or it is an in-progress claim of the same request whose lease ran out or whose owner is gone. */
const mayTakeOver = (owner: string) => sql`(r.expires_at < now()
             or (r.state = 'in_progress' and r.fingerprint = u.f
                 and (r.locked_until < now()
                      or (r.owner_id <> ${owner}::uuid and not exists (
                            select 1 from process_instances p where p.id = r.owner_id
                              and p.heartbeat_at > now() - make_interval(secs => ${STALE_AFTER_SECONDS}))))))`;

/** The UPDATE … SET of a takeover: the record becomes this request's claim, in progress. */
const takeOver = (owner: string, ttlHours: number) => sql`update idempotency_keys r set
        fingerprint = u.f, state = 'in_progress', locked_until = now() + make_interval(secs => ${LEASE_SECONDS}),
        claim_token = u.c, owner_id = ${owner}::uuid, expires_at = now() + make_interval(hours => ${ttlHours}),
        response_status = null, response_body = null, response_event_id = null, response_sealed = false, created_at = now()`;

/**
 * The claim of Idempotency-Keys by a request of its own (idempotency.ts), in its own short
 * transaction, so the key's record says "in progress" while the work runs in a transaction of its
 * own. One statement: a key with no record gets one; a record is taken over when its retention
 * ended, or when it is an in-progress claim of the same request whose lease ran out or whose owner
 * process is gone (no heartbeat for STALE_AFTER_SECONDS: killed, crashed). Returns the tokens of
 * the keys claimed; any other key is replayed, refused as reused, or answered "in progress" by the
 * caller.
 *
 * Every write of the statement waits for the keys' advisory locks (`locked`, joined by both), the
 * locks a batch holds from its claim to its commit (`lockKeys`): a key a batch is working on is
 * claimed here only once that batch ended. The statement's snapshot may predate the batch's
 * commit: its insert then fails with a unique violation of the primary key (`isClaimRace`) and the
 * caller claims again, and finds the batch's record.
 *
 * Why not INSERT … ON CONFLICT: its speculative insertion writes a second WAL record (a confirm,
 * 48 bytes) for every new key. Here a new key is a plain insert. Concurrent claims of one new key
 * still have one winner: the second waits on the first's lock, and its insert fails with a unique
 * violation once the first commits; the caller claims again, and then finds the winner's record.
 * An existing record is locked by the UPDATE, and re-checked once its holder ends, as ON CONFLICT
 * DO UPDATE did.
 */
export function claimKeys(db: Queryable, claims: KeyClaim[], owner: string, ttlHours: number): CompiledQuery<{ claim_token: string }> {
  return claimKeysOnce(db, arraysOf(claims), owner, ttlHours);
}

const claimKeysOnce = compiledPerShape(
  (_db: Queryable, arrays: ClaimArrays, owner: string, ttlHours: number) => sql<{ claim_token: string }>`
    with u (t, e, k, f, c) as (
      select * from unnest(${unnestArgs(arrays)})
    ),
    locked as (
      select count(*) as n from (
        select pg_advisory_xact_lock(h) from (select distinct ${keyLock('u.t', 'u.e', 'u.k')} as h from u order by h) s) l
    ),
    taken as (
      ${takeOver(owner, ttlHours)}
      from u, locked
      where r.tenant_id = u.t and r.environment = u.e and r.key = u.k and locked.n > 0
        and ${mayTakeOver(owner)}
      returning r.claim_token
    ),
    fresh as (
      insert into idempotency_keys (tenant_id, environment, key, fingerprint, state, locked_until, claim_token, owner_id, expires_at)
      select u.t, u.e, u.k, u.f, 'in_progress', now() + make_interval(secs => ${LEASE_SECONDS}), u.c, ${owner}::uuid,
        now() + make_interval(hours => ${ttlHours})
      from u, locked
      where locked.n > 0 and not exists (select 1 from idempotency_keys r where r.tenant_id = u.t and r.environment = u.e and r.key = u.k)
      returning claim_token
    )
    select claim_token from taken union all select claim_token from fresh`,
  // The parameters in the text's order: the arrays, the takeover's (lease, owner, retention), mayTakeOver's, the insert's.
  (arrays, owner, ttlHours) => ({
    shape: 'claim',
    parameters: [...arrays, LEASE_SECONDS, owner, ttlHours, owner, STALE_AFTER_SECONDS, LEASE_SECONDS, owner, ttlHours],
  }),
);

/**
 * A batch's claim (idempotency-batch.ts), sent right after `lockKeys` in the batch's transaction:
 * it writes no record for a new key, which the batch's lock holds until the commit, when the
 * batch inserts the key's record completed with its answer (one heap insert). An existing record
 * is taken over under the same rule as `claimKeys`. Returns the token of each key claimed, and
 * whether it is new (`fresh`: no record, to be inserted) or taken over (a record, to be updated).
 */
export function claimBatchKeys(
  db: Queryable,
  claims: KeyClaim[],
  owner: string,
  ttlHours: number,
): CompiledQuery<{ claim_token: string; fresh: boolean }> {
  return claimBatchKeysOnce(db, arraysOf(claims), owner, ttlHours);
}

const claimBatchKeysOnce = compiledPerShape(
  (_db: Queryable, arrays: ClaimArrays, owner: string, ttlHours: number) => sql<{ claim_token: string; fresh: boolean }>`
    with u (t, e, k, f, c) as (
      select * from unnest(${unnestArgs(arrays)})
    ),
    taken as (
      ${takeOver(owner, ttlHours)}
      from u
      where r.tenant_id = u.t and r.environment = u.e and r.key = u.k and ${mayTakeOver(owner)}
      returning r.claim_token
    )
    select claim_token, false as fresh from taken
    union all
    select u.c, true from u
    where not exists (select 1 from idempotency_keys r where r.tenant_id = u.t and r.environment = u.e and r.key = u.k)`,
  (arrays, owner, ttlHours) => ({ shape: 'claim', parameters: [...arrays, LEASE_SECONDS, owner, ttlHours, owner, STALE_AFTER_SECONDS] }),
);

/**
 * A batch's claim as it sends it, first in its transaction: the keys' locks, then the claim on a
 * generic plan (db/generic-plan.ts: its keys arrive as arrays, and PostgreSQL planned it anew for
 * every batch, the largest bind of a lone transfer; the generic plan walks the same primary key).
 * Rows: the claim's are the third result.
 */
export function batchClaim(db: Queryable, claims: KeyClaim[], owner: string, ttlHours: number) {
  return [lockKeys(db, claims), ...onGenericPlan(db, claimBatchKeys(db, claims, owner, ttlHours))] as const;
}

/**
 * A claim that lost the race for a new key to a record committed after its statement began (a
 * lone claim's insert, or a batch's insert of its completed record): claim again, and find it.
 */
export function isClaimRace(err: unknown): boolean {
  return isUniqueViolation(err, 'idempotency_keys_pkey');
}
