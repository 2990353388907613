import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql, type ColumnType } from 'kysely';
import type { Db, Queryable, Trx } from '../db/client.js';
import { processInstance } from '../db/instance.js';
import { canonicalJson } from '../lib/json.js';
import { sha256Hex, type Sealer } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import { AppError } from '../core/errors.js';
import { statusOf } from './errors.js';
import { ok } from './envelope.js';
import { replayOf, responseData } from './replay.js';
import { retryOnConflict } from '../db/retry.js';
import { scoped, scopedDelete, scopedUpdate } from '../db/scoped.js';
import { claimKeys, isClaimRace } from './idempotency-claim.js';

interface IdempotencyKeysTable {
  tenant_id: string;
  environment: string;
  key: string;
  fingerprint: string;
  state: 'in_progress' | 'completed';
  /** The lease and the token of a claim in progress (null on a record inserted completed, migration 1269). */
  locked_until: ColumnType<Date | null, Date | string | null, Date | string | null>;
  claim_token: string | null;
  /** The process_instances row of the process running the work (null: claimed by older code). */
  owner_id: string | null;
  response_status: number | null;
  response_body: string | null;
  /** The event whose data is the answer, instead of its text (idempotency-batch.ts, migration 1262). */
  response_event_id: string | null;
  response_sealed: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: ColumnType<Date, never, never>;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

declare module '../db/types.js' {
  interface Database {
    idempotency_keys: IdempotencyKeysTable;
  }
}

/** One key record: the business, the environment and the client's Idempotency-Key. */
type KeyScope = { tenantId: string; environment: string; key: string };

const KEY_RE = /^[\x20-\x7e]{1,255}$/;
/** Business outcomes that are stored and replayed; anything else (400, 401, 403, 429, 5xx) is not. */
const STORED_ERROR_STATUSES = new Set([404, 409, 412, 422]);

export interface IdempotencyOptions<T = unknown> {
  /** The response holds a secret (new keys, webhook secrets): sealed at rest. */
  sensitive?: boolean;
  /** Success status (200 unless the contract says otherwise), or a function of the result. */
  status?: number | ((data: T) => number);
  /**
   * Runs the unit (work + completion) in a transaction; default: a transaction of its own.
   * (Batched money movements use idempotency-batch.ts instead, which claims keys in the batch.)
   */
  executor?: (unit: (trx: Trx) => Promise<string>) => Promise<string>;
}

/** Reads and checks the Idempotency-Key header of a POST. */
export function idempotencyKeyOf(request: FastifyRequest): string {
  const header = request.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined || key === '') {
    throw new AppError('missing_idempotency_key');
  }
  if (!KEY_RE.test(key)) {
    throw new AppError('invalid_idempotency_key');
  }
  return key;
}

/**
 * docs/api-rules.md#idempotency. The key is claimed in its own short transaction; then the work, its
 * outcome and the record's completion commit together in one transaction. A crash or an
 * unexpected error releases the claim (or its lease runs out), so a retry runs afresh.
 */
export class Idempotency {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
    private readonly ttlHours: number,
  ) {}

  async run<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    operation: string,
    work: (trx: Trx) => Promise<T>,
    options: IdempotencyOptions<T> = {},
  ): Promise<{ data: T; error: null }> {
    const { tenantId, environment } = request.ctx;
    const key = idempotencyKeyOf(request);
    // A secret in the answer (first or replayed) is kept by no cache between us and the client.
    if (options.sensitive) reply.header('Cache-Control', 'no-store');
    const fingerprint = sha256Hex(`${operation}\n${canonicalJson(request.params ?? {})}\n${canonicalJson(request.body ?? null)}`);
    const scope: KeyScope = { tenantId, environment, key };
    const claimToken = await this.claim(scope, fingerprint, reply);
    const sealContext = `${tenantId}:${environment}:${key}`;
    let status = typeof options.status === 'number' ? options.status : 200;

    try {
      reply.code(status);
      const execute = options.executor ?? ((unit: (trx: Trx) => Promise<string>) => this.db.transaction().execute(unit));
      // A deadlock or serialization failure (two processes, two lock orders) rolled the unit back
      // whole: it runs again instead of answering 500.
      const text = await retryOnConflict(() =>
        execute(async (trx) => {
          const data = await work(trx);
          if (typeof options.status === 'function') status = options.status(data);
          reply.code(status);
          // Serialized by the route's response schema, so a replay is byte for byte the same.
          const serialized = reply.serialize(ok(data)) as string;
          await this.complete(trx, scope, claimToken, status, serialized, options.sensitive, sealContext);
          return serialized;
        }),
      );
      reply.type('application/json; charset=utf-8');
      return text as unknown as { data: T; error: null };
    } catch (err) {
      if (err instanceof AppError && STORED_ERROR_STATUSES.has(statusOf(err)) && err.code !== 'idempotency_request_in_progress') {
        const payload = {
          data: null,
          error: { code: err.code, message: err.message, request_id: String(request.id), details: err.details },
        };
        await this.complete(this.db, scope, claimToken, statusOf(err), JSON.stringify(payload), false, sealContext);
        throw err;
      }
      await this.release(scope, claimToken).catch((releaseErr: unknown) => {
        // The database is away (restarting): release as soon as it is back, not after the lease.
        request.log.error({ err: releaseErr }, 'could not release idempotency claim; retrying in the background');
        processInstance(this.db).retryLater(() => this.release(scope, claimToken));
      });
      throw err;
    }
  }

  /** Returns this request's claim token, or throws the replay / conflict outcome. */
  private async claim(scope: KeyScope, fingerprint: string, reply: FastifyReply): Promise<string> {
    const token = newId();
    const owner = await processInstance(this.db).ensure();
    // One statement (claimKeys): insert, or take over. Concurrent duplicates block on the row and
    // then see the winner's claim, or, for a new key, fail on its index entry and claim again. Two
    // runs never both commit: completion checks the claim token.
    let claimed;
    try {
      claimed = await this.db.executeQuery(claimKeys(this.db, [{ ...scope, fingerprint, token }], owner, this.ttlHours));
    } catch (err) {
      if (isClaimRace(err)) return this.claim(scope, fingerprint, reply);
      throw err;
    }
    if (claimed.rows.length > 0) return token;

    const existing = await scoped(this.db, 'idempotency_keys', scope)
      .selectAll()
      // Its owner is alive and working: ask for a retry soon (the claim ends with the work).
      .select(sql<number>`least(2, greatest(1, ceil(extract(epoch from locked_until - now()))))::int`.as('retry_after'))
      .select(responseData('idempotency_keys').as('response_data'))
      .where('key', '=', scope.key)
      .executeTakeFirst();
    if (!existing) return this.claim(scope, fingerprint, reply); // it expired and was swept in between
    if (existing.fingerprint !== fingerprint) {
      throw new AppError('idempotency_key_reused');
    }
    const context = `${scope.tenantId}:${scope.environment}:${scope.key}`;
    const replay = existing.state === 'completed' ? replayOf(existing, reply, (sealed) => this.sealer.open(sealed, context)) : null;
    if (replay) throw replay;
    throw new AppError(
      'idempotency_request_in_progress',
      'A request with this Idempotency-Key is still being processed; retry shortly',
      [],
      { 'Retry-After': String(existing.retry_after) },
    );
  }

  private async complete(
    db: Queryable,
    scope: KeyScope,
    token: string,
    status: number,
    text: string,
    sensitive: boolean | undefined,
    sealContext: string,
  ): Promise<void> {
    const result = await scopedUpdate(db, 'idempotency_keys', scope)
      .set({
        state: 'completed',
        response_status: status,
        response_body: sensitive ? this.sealer.seal(text, sealContext) : text,
        response_sealed: Boolean(sensitive),
      })
      .where('key', '=', scope.key)
      .where('claim_token', '=', token)
      .executeTakeFirst();
    if (result.numUpdatedRows !== 1n) {
      // Our lease ran out and another request took the key over: roll our work back.
      throw new AppError('idempotency_request_in_progress', 'This request took too long and was superseded', [], {
        'Retry-After': '1',
      });
    }
  }

  private async release(scope: KeyScope, token: string) {
    await scopedDelete(this.db, 'idempotency_keys', scope)
      .where('key', '=', scope.key)
      .where('claim_token', '=', token)
      .where('state', '=', 'in_progress')
      .execute();
  }

  /** Deletes records past their retention (the cleanup worker calls this). */
  async sweep(batch = 1000): Promise<number> {
    const result = await sql`
      delete from idempotency_keys where ctid in (
        select ctid from idempotency_keys where expires_at < now() limit ${batch})`.execute(this.db);
    return Number(result.numAffectedRows ?? 0n);
  }
}
