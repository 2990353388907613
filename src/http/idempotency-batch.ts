import type { FastifyReply, FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import { Batcher, type BatcherOptions } from '../db/batcher.js';
import type { Db, Queryable, Trx } from '../db/client.js';
import { pipelined, type KeyedBatch, type LockPlan } from '../db/pipeline.js';
import { write, WriteSet } from '../db/write-set.js';
import { valuesOf, valuesParameters, valuesShape } from '../db/values.js';
import { compiledPerShape } from '../db/compiled.js';
import { canonicalJson } from '../lib/json.js';
import { sha256Hex, type Sealer } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import { ok } from './envelope.js';
import { AppError, type ItemOutcome } from '../core/errors.js';
import { statusOf } from './errors.js';
import { processInstance } from '../db/instance.js';
import { isRetryableConflict } from '../db/retry.js';
import { isUniqueViolation } from '../db/errors.js';
import { idempotencyKeyOf } from './idempotency.js';
import { batchClaim, isClaimRace } from './idempotency-claim.js';
import { replayOf, responseData, type StoredAnswer } from './replay.js';
import type { Deps } from './deps.js';

/** Stored business outcomes, as in idempotency.ts: anything else (400, 403, 5xx) is not stored. */
const STORED_ERROR_STATUSES = new Set([404, 409, 412, 422]);

interface Item<I> {
  request: FastifyRequest;
  reply: FastifyReply;
  input: I;
  tenantId: string;
  environment: string;
  key: string;
  fingerprint: string;
  token: string;
  resolve: (text: string) => void;
  reject: (err: unknown) => void;
}

/** What an unclaimed key's record says (another request holds or finished it). */
interface KeyRecord extends StoredAnswer {
  fingerprint: string;
  state: string;
  retry_after: number;
}

/** An outcome stored as its record's answer: its text, or the event whose data it is (then the text is not stored). */
interface Stored<I> {
  item: Item<I>;
  status: number;
  text: string;
  eventId: string | null;
}

/** How each item ends once the batch committed (settled only after the commit: nothing unreported is durable). */
type Settlement = { text: string; eventId: string | null } | { err: unknown };

/**
 * Idempotent POSTs executed in batches (docs/money-path.md): concurrent requests are gathered
 * (db/batcher.ts) and each batch runs in ONE transaction through the module's pipeline, which
 * calls this layer's two steps (db/pipeline.ts KeyedBatch): `claim`, every key's advisory lock and
 * then one statement that takes over records as a lone claim would and notes the keys with none
 * (idempotency-claim.ts: a duplicate key waits on the lock until the first holder ended, then sees
 * its outcome — so one effect per key, across processes and both paths too), and `answer`, each
 * claimed item's outcome. Then a new key's stored outcome is inserted as its completed record
 * (its only write), a record taken over is completed with one UPDATE or dropped with one DELETE,
 * and the transaction commits. An item's refusal is its own outcome; an unexpected error reruns
 * every item alone, so only the faulty one fails. The response text is serialized by the route's
 * schema and stored as is, so a replay is byte for byte the same (same fingerprint as
 * idempotency.ts, so both paths recognize each other's keys). An answer that is an event's data
 * (`eventId` of its outcome) is not stored again: the record points at the event (replay.ts).
 */
export class BatchedIdempotency<I, T> {
  private readonly batcher: Batcher<Item<I>>;

  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
    private readonly ttlHours: number,
    private readonly operation: string,
    /** The module's steps for one batch: it calls `claim` first and `answer` last (db/pipeline.ts KeyedBatch). */
    private readonly pipeline: (batch: KeyedBatch<I, T>) => Promise<void>,
    options: Omit<BatcherOptions<Item<I>>, 'fail'>,
  ) {
    this.batcher = new Batcher((batch, release) => this.execute(batch, release), {
      ...options,
      fail: (batch, err) => batch.forEach((item) => item.reject(err)),
    });
  }

  /**
   * Queues the request; resolves once its batch committed, with the already serialized response
   * text (typed as the envelope for the route; Fastify sends a string as is).
   */
  run(request: FastifyRequest, reply: FastifyReply, input: I): Promise<{ data: T; error: null }> {
    return this.enqueue(request, reply, input) as unknown as Promise<{ data: T; error: null }>;
  }

  private enqueue(request: FastifyRequest, reply: FastifyReply, input: I): Promise<string> {
    // Inside the executor: a missing or bad key rejects the promise (400) like any other outcome.
    return new Promise<string>((resolve, reject) => {
      const { tenantId, environment } = request.ctx;
      const key = idempotencyKeyOf(request);
      const fingerprint = sha256Hex(`${this.operation}\n${canonicalJson(request.params ?? {})}\n${canonicalJson(request.body ?? null)}`);
      const item: Item<I> = { request, reply, input, tenantId, environment, key, fingerprint, token: newId(), resolve, reject };
      this.batcher.submit(item, `${tenantId}:${environment}:${key}`);
    });
  }

  private async execute(batch: Item<I>[], release?: () => void): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        // Before the transaction: registering this process needs a connection of its own.
        const owner = await processInstance(this.db).ensure();
        const { settled, written } = await this.db.transaction().execute((trx) => this.runBatch(trx, batch, owner));
        // The write statement was answered before the COMMIT behind it; had it failed, that COMMIT
        // rolled the transaction back, and nothing of the batch is durable.
        await written;
        const answer = () => batch.forEach((item, i) => this.settle(item, settled[i]!));
        // Committed: the lane goes to the next batch first (its start is queued on this turn's
        // check phase, ahead of the answers), so PostgreSQL runs its claim and first locks while
        // this thread writes these responses, instead of the two waiting on each other. An item
        // rerun alone (below) holds no lane of its own: it answers at once.
        if (!release) return answer();
        release();
        setImmediate(answer);
        return;
      } catch (err) {
        // A claim that lost the race for a new key (idempotency-claim.ts) rolled the batch back
        // before any work: claimed again, it finds the winner's record. So does a lone item that
        // lost a get-or-create race to another lane (a business's first fx_position account, made
        // by both, fails the later one's write on its unique index): run again, it finds the row.
        // A duplicate the request itself causes fails the same way each time and is reported.
        if ((isRetryableConflict(err) || isClaimRace(err) || (batch.length === 1 && isUniqueViolation(err))) && attempt < 4) continue;
        if (batch.length === 1) return batch[0]!.reject(err);
        // Not a refusal but a fault: nothing of the batch committed; find the faulty item alone.
        for (const item of batch) await this.execute([item]);
        return;
      }
    }
  }

  private settle(item: Item<I>, s: Settlement) {
    try {
      if ('text' in s) {
        // The request log keeps the event rather than the text (http/request-log.ts).
        item.request.answerEventId = s.eventId;
        item.reply.type('application/json; charset=utf-8');
        item.resolve(s.text);
      } else item.reject(s.err);
    } catch (err) {
      // Answered from setImmediate, outside any try of its caller: a throw would end the process.
      item.reject(err);
    }
  }

  /**
   * The batch's statements; the last one, every write of the batch, is sent but not awaited: the
   * COMMIT follows it on the pipelined connection (db/client.ts) without waiting for its answer,
   * so the balance rows locked before it are held one round trip less. The caller awaits
   * `written` once the transaction ended: on PostgreSQL a COMMIT after a failed statement rolls
   * back (and reports no error), so a failed write still means nothing committed.
   */
  private async runBatch(trx: Trx, batch: Item<I>[], owner: string): Promise<{ settled: Settlement[]; written: Promise<void> }> {
    const settled: (Settlement | undefined)[] = batch.map(() => undefined);
    const writes = new WriteSet(trx);
    let mine: number[] | undefined;
    let fresh: Set<string> | undefined;
    let outcomes: ItemOutcome<T>[] | undefined;
    await this.pipeline({
      trx,
      writes,
      inputs: batch.map((item) => item.input),
      claim: async <A>(first: LockPlan<A> | undefined) => {
        // A failed claim aborts the transaction: the statements behind it fail too, and so the batch.
        // The claim is a statement after the keys' locks: its snapshot sees what their last holder committed.
        const [, , claims, , ...locked] = await pipelined(
          trx,
          ...batchClaim(trx, batch, owner, this.ttlHours),
          ...(first?.statements ?? []),
        );
        const claimed = new Set(claims.map((r) => r.claim_token));
        fresh = new Set(claims.flatMap((r) => (r.fresh ? [r.claim_token] : [])));
        mine = batch.flatMap((item, i) => (claimed.has(item.token) ? [i] : []));
        const read = first?.read(locked);
        await this.answerUnclaimed(trx, batch, claimed, settled);
        return { claimed: mine.map((i) => batch[i]!.input), first: read as A };
      },
      answer: (given) => void (outcomes = given),
    });
    if (!mine || !fresh || !outcomes || outcomes.length !== mine.length)
      throw new Error(`${this.operation}: the batch was not claimed and answered`);
    const { stored, dropped } = this.outcomesOf(batch, mine, outcomes, settled);
    // A key with no record gets one, completed; a record taken over is completed or dropped. A new
    // key's outcome that is not stored (400, 403) leaves nothing: it had no record.
    const isNew = (item: Item<I>) => fresh!.has(item.token);
    const [inserted, updated] = [stored.filter((s) => isNew(s.item)), stored.filter((s) => !isNew(s.item))];
    await this.insertCompleted(writes, inserted);
    await this.complete(writes, updated);
    await this.drop(
      writes,
      dropped.filter((item) => !isNew(item)),
    );
    const written = writes.flush();
    written.catch(() => {}); // awaited by the caller
    return { settled: settled.map((s) => s!), written };
  }

  /** Each claimed item's outcome: the text it answers (stored, or not: 400 and 403 drop their claim). */
  private outcomesOf(batch: Item<I>[], mine: number[], outcomes: ItemOutcome<T>[], settled: (Settlement | undefined)[]) {
    const stored: Stored<I>[] = [];
    const dropped: Item<I>[] = [];
    mine.forEach((i, k) => {
      const item = batch[i]!;
      const outcome = outcomes[k]!;
      if (outcome.ok) {
        item.reply.code(200);
        const text = item.reply.serialize(ok(outcome.data)) as string;
        const eventId = outcome.eventId ?? null;
        stored.push({ item, status: 200, text, eventId });
        settled[i] = { text, eventId };
        return;
      }
      settled[i] = { err: outcome.error };
      if (STORED_ERROR_STATUSES.has(statusOf(outcome.error)))
        stored.push({ item, status: statusOf(outcome.error), text: errorText(item.request, outcome.error), eventId: null });
      else dropped.push(item);
    });
    return { stored, dropped };
  }

  /** Keys another request holds or finished: replay, 422 reused, or 409 in progress (as idempotency.ts). */
  private async answerUnclaimed(trx: Trx, batch: Item<I>[], claimed: Set<string>, settled: (Settlement | undefined)[]) {
    const others = batch.flatMap((item, i) => (claimed.has(item.token) ? [] : [{ item, i }]));
    if (others.length === 0) return;
    // eslint-disable-next-line no-restricted-syntax -- set-based over a batch's keys, each with its own business and environment
    const rows = await sql<KeyRecord & { tenant_id: string; environment: string; key: string }>`
      select k.tenant_id, k.environment, k.key, k.fingerprint, k.state, k.response_status, k.response_body, k.response_sealed,
        ${responseData('k')} as response_data, greatest(1, ceil(extract(epoch from k.locked_until - now())))::int as retry_after
      from idempotency_keys k
      join unnest(${others.map((o) => o.item.tenantId)}::uuid[], ${others.map((o) => o.item.environment)}::text[], ${others.map((o) => o.item.key)}::text[])
        as u(t, e, k) on k.tenant_id = u.t and k.environment = u.e and k.key = u.k`.execute(trx);
    const byKey = new Map(rows.rows.map((r) => [`${r.tenant_id}:${r.environment}:${r.key}`, r]));
    for (const { item, i } of others) {
      const row = byKey.get(`${item.tenantId}:${item.environment}:${item.key}`);
      settled[i] = { err: this.unclaimedOutcome(item, row) };
    }
  }

  private unclaimedOutcome(item: Item<I>, row: KeyRecord | undefined) {
    if (row && row.fingerprint !== item.fingerprint) return new AppError('idempotency_key_reused');
    const replay =
      row?.state === 'completed'
        ? replayOf(row, item.reply, (sealed) => this.sealer.open(sealed, `${item.tenantId}:${item.environment}:${item.key}`))
        : null;
    if (replay) return replay;
    const retryAfter = String(row?.retry_after ?? 1);
    return new AppError(
      'idempotency_request_in_progress',
      'A request with this Idempotency-Key is still being processed; retry shortly',
      [],
      { 'Retry-After': retryAfter },
    );
  }

  /**
   * The records of new keys, each inserted once, completed with its stored outcome (same
   * transaction as the effects; the keys' locks held since the claim keep every other claim out
   * until the commit). Should a record have appeared all the same (a claim that took no lock, of an
   * older version), the insert fails on the primary key, nothing of the batch commits, and the
   * batch runs again (`isClaimRace`), then finds it. A completed record carries no claim: no
   * lease, token or owner (migration 1269).
   */
  private async insertCompleted(writes: WriteSet, stored: Stored<I>[]) {
    if (stored.length === 0) return;
    const rows = stored.map((s) => [s.item.tenantId, s.item.environment, s.item.key, s.item.fingerprint, s.status, ...answerOf(s)]);
    await write(writes, (db) => insertCompletedOnce(db, this.ttlHours, rows));
  }

  /** Completes every stored outcome of a record taken over with one UPDATE (same transaction as the effects). */
  private async complete(writes: WriteSet, stored: Stored<I>[]) {
    if (stored.length === 0) return;
    await write(
      writes,
      // eslint-disable-next-line no-restricted-syntax -- set-based over a batch's keys, each with its own business and environment
      () => sql`
      update idempotency_keys k set state = 'completed', response_status = u.s, response_body = u.b, response_event_id = u.v,
        response_sealed = false
      from ${valuesOf(
        'u',
        { t: 'uuid', e: 'text', k: 'text', c: 'uuid', s: 'int', b: 'text', v: 'uuid' },
        stored.map((s) => [s.item.tenantId, s.item.environment, s.item.key, s.item.token, s.status, ...answerOf(s)]),
      )}
      where k.tenant_id = u.t and k.environment = u.e and k.key = u.k and k.claim_token = u.c`,
    );
  }

  /** Outcomes that are not stored (400, 403) of records taken over: the claim goes, so a corrected retry runs afresh. */
  private async drop(writes: WriteSet, dropped: Item<I>[]) {
    if (dropped.length === 0) return;
    await write(
      writes,
      // eslint-disable-next-line no-restricted-syntax -- set-based over a batch's keys, each with its own business and environment
      () => sql`
      delete from idempotency_keys k
      using ${valuesOf(
        'u',
        { t: 'uuid', e: 'text', k: 'text', c: 'uuid' },
        dropped.map((d) => [d.tenantId, d.environment, d.key, d.token]),
      )}
      where k.tenant_id = u.t and k.environment = u.e and k.key = u.k and k.claim_token = u.c`,
    );
  }
}

/** insertCompleted's statement, built and compiled by Kysely once per shape of its rows (db/values.ts valuesShape). */
const insertCompletedOnce = compiledPerShape(
  (_db: Queryable, ttlHours: number, rows: unknown[][]) => sql`
      insert into idempotency_keys (tenant_id, environment, key, fingerprint, state, expires_at, response_status, response_body,
        response_event_id)
      select u.t, u.e, u.k, u.f, 'completed', now() + make_interval(hours => ${ttlHours}), u.s, u.b, u.v
      from ${valuesOf('u', { t: 'uuid', e: 'text', k: 'text', f: 'text', s: 'int', b: 'text', v: 'uuid' }, rows)}`,
  (ttlHours, rows) => ({ shape: valuesShape(rows), parameters: [ttlHours, ...valuesParameters(rows)] }),
);

/** A stored outcome's record columns response_body and response_event_id: the event when there is one, else the text. */
function answerOf<I>(s: Stored<I>): [string | null, string | null] {
  return s.eventId === null ? [s.text, null] : [null, s.eventId];
}

function errorText(request: FastifyRequest, err: AppError): string {
  return JSON.stringify({
    data: null,
    error: { code: err.code, message: err.message, request_id: String(request.id), details: err.details },
  });
}

/**
 * A route's gatherer (docs/money-path.md): its concurrent requests share batches sized and laned
 * as the transfers' (`TRANSFER_BATCH_SIZE`; `TRANSFER_BATCH_LANES` on PostgreSQL, one lane on
 * PGlite, which has one connection), each run by the module's `pipeline`. `name` labels its
 * batch-size metric; `touches`, what a request's batch will lock (db/batcher.ts), keeps a batch
 * started beside running ones off their rows: every route that gathers says it, as the batcher's
 * spare lanes otherwise take its queue in arrival order and wait on a stalled batch's rows.
 */
export function gathered<I, T>(
  deps: Pick<Deps, 'db' | 'sealer' | 'config' | 'dbKind'>,
  operation: string,
  name: string,
  pipeline: (batch: KeyedBatch<I, T>) => Promise<void>,
  touches: (input: I) => readonly string[],
): BatchedIdempotency<I, T> {
  return new BatchedIdempotency(deps.db, deps.sealer, deps.config.IDEMPOTENCY_TTL_HOURS, operation, pipeline, {
    maxBatch: deps.config.TRANSFER_BATCH_SIZE,
    lanes: deps.dbKind === 'postgres' ? deps.config.TRANSFER_BATCH_LANES : 1,
    ...(deps.dbKind === 'postgres' && deps.config.TRANSFER_BATCH_SPARE_LANES > 0
      ? { spare: { lanes: deps.config.TRANSFER_BATCH_SPARE_LANES, stallMs: deps.config.TRANSFER_BATCH_STALL_MS } }
      : {}),
    touches: (item: Item<I>) => touches(item.input),
    name,
  });
}
