import { sql, type ColumnType, type Insertable, type Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import { compiledOnce } from '../../db/compiled.js';
import { paginate, type Page, type PageQuery } from '../../db/pagination.js';
import { scoped } from '../../db/scoped.js';
import { arrayParameter, escapeLike, stringConstant } from '../../db/values.js';
import { isUuid } from '../../lib/ids.js';
import type { Scope } from '../../core/context.js';

export interface ApiRequestLogTable {
  id: string;
  tenant_id: string;
  environment: string;
  /** The request id a client sent; null when the server made it, which is then the row's `id` (migration 1265). */
  request_id: string | null;
  method: string;
  path: string;
  query: string | null;
  status: number;
  status_class: number;
  duration_ms: number;
  idempotency_key: string | null;
  idempotency_replayed: boolean;
  key_prefix: string | null;
  request_body: string | null;
  response_body: string | null;
  /** The event whose data the answer is, instead of its text (migration 1264). */
  response_event_id: string | null;
  created_at: ColumnType<Date, Date, never>;
}

declare module '../../db/types.js' {
  interface Database {
    api_request_log: ApiRequestLogTable;
  }
}

export type RequestLogRow = Selectable<ApiRequestLogTable>;
export type NewRequestLogRow = Insertable<ApiRequestLogTable>;

/** Rows a statement: a flush writes at most a chunk of the buffer anyway. */
const INSERT_CHUNK = 500;

/**
 * The columns written through an array parameter each, in the order of the statement below, with
 * their array types. The two bodies go otherwise: see `insertRows`.
 */
const ARRAY_COLUMNS = [
  ['id', 'uuid'],
  ['tenant_id', 'uuid'],
  ['environment', 'text'],
  ['request_id', 'text'],
  ['method', 'text'],
  ['path', 'text'],
  ['query', 'text'],
  ['status', 'int4'],
  ['status_class', 'int2'],
  ['duration_ms', 'int4'],
  ['idempotency_key', 'text'],
  ['idempotency_replayed', 'bool'],
  ['key_prefix', 'text'],
  ['created_at', 'int8'],
  ['response_event_id', 'uuid'],
] as const satisfies readonly (readonly [keyof NewRequestLogRow, string])[];

/** A row's values in the order of ARRAY_COLUMNS: absent as null (false for the replay flag), the time as epoch milliseconds. */
function arrayValues(row: NewRequestLogRow): unknown[] {
  return [
    row.id,
    row.tenant_id,
    row.environment,
    row.request_id ?? null,
    row.method,
    row.path,
    row.query ?? null,
    row.status,
    row.status_class,
    row.duration_ms,
    row.idempotency_key ?? null,
    row.idempotency_replayed ?? false,
    row.key_prefix ?? null,
    row.created_at.getTime(),
    row.response_event_id ?? null,
  ];
}

/** Where each row's bodies are in the bodies parameter: 1-based byte offset and byte length, NULL for no body. */
const BODY_BOUNDS = ['request_at', 'request_len', 'response_at', 'response_len'] as const;

const ROW = sql.raw([...ARRAY_COLUMNS.map(([c]) => c), ...BODY_BOUNDS].join(', '));

/**
 * One statement whatever the number of rows, compiled once (db/compiled.ts): a flush neither
 * builds nor compiles a query, and the connection's prepared statement is reused. The short
 * columns are an array parameter each. The bodies, most of a row's bytes, are one bytea parameter
 * of their UTF-8 bytes end to end, cut back into text by offset and length: no JSON or array
 * escaping of every body in JavaScript and no array text for PostgreSQL to unescape; `substring`
 * and `convert_from` are strict, so a NULL offset and length give a NULL body. A time goes as
 * epoch milliseconds, turned into a timestamptz by PostgreSQL (no ISO text written per row). The
 * statement also sets its transaction's `synchronous_commit` (`set_config(…, true)` is `set
 * local`), which took a statement of its own, a round trip a flush.
 *
 * Rows of a first attempt are inserted as they are: their ids were made for them by the flusher,
 * so none can be there yet, and the statement reads nothing of the table. Checking every row
 * against the table cost the log its whole history: the connection's generic plan, made while
 * the table was small, joined the rows to a sequential scan of it, and every later flush scanned
 * the grown table again (until autovacuum analyzed it; never with it off), about 200 µs of
 * PostgreSQL's time a row at 60,000 rows (docs/benchmarks.md). Only a retried flush (its commit's
 * answer may have been lost) skips the rows already there, with `on conflict do nothing`: one more
 * WAL record a row, on a path a failure takes.
 */
function insertStatement(retry: boolean) {
  return compiledOnce((db: Queryable, bodies: unknown, ...arrays: unknown[]) => {
    const types = [...ARRAY_COLUMNS.map(([, type]) => type), ...BODY_BOUNDS.map(() => 'int4')];
    const insert = db
      .insertInto('api_request_log')
      .columns([...ARRAY_COLUMNS.map(([c]) => c), 'request_body', 'response_body'])
      .expression(
        sql`select ${sql.raw(ARRAY_COLUMNS.map(([c]) => (c === 'created_at' ? 'to_timestamp(r.created_at::float8 / 1000)' : `r.${c}`)).join(', '))},
            convert_from(substring(p.bodies from r.request_at for r.request_len), 'UTF8'),
            convert_from(substring(p.bodies from r.response_at for r.response_len), 'UTF8')
          from (select ${bodies}::bytea as bodies, set_config('synchronous_commit', 'off', true) as commit_mode) as p,
            unnest(${sql.join(arrays.map((values, i) => sql`${values}::${sql.raw(types[i]!)}[]`))}) as r(${ROW})`,
      );
    return retry ? insert.onConflict((oc) => oc.columns(['tenant_id', 'environment', 'id']).doNothing()) : insert;
  });
}
const insertRows = insertStatement(false);
const insertRowsAgain = insertStatement(true);

/** The bodies as one buffer of their UTF-8 bytes end to end, and where each row's are in it. */
function bodyParameters(rows: NewRequestLogRow[]): unknown[] {
  const n = rows.length;
  let size = 0;
  for (const row of rows) size += Buffer.byteLength(row.request_body ?? '') + Buffer.byteLength(row.response_body ?? '');
  const bodies = Buffer.allocUnsafe(size);
  const bounds = BODY_BOUNDS.map(() => new Array<number | null>(n));
  let at = 0;
  const put = (body: string | null | undefined, column: number, i: number) => {
    if (body === null || body === undefined) {
      bounds[column]![i] = bounds[column + 1]![i] = null;
      return;
    }
    const written = bodies.write(body, at);
    bounds[column]![i] = at + 1;
    bounds[column + 1]![i] = written;
    at += written;
  };
  for (let i = 0; i < n; i++) {
    put(rows[i]!.request_body, 0, i);
    put(rows[i]!.response_body, 2, i);
  }
  return [bodies, ...bounds.map((values) => `{${values.map((v) => (v === null ? 'NULL' : v)).join(',')}}`)];
}

/**
 * The statement's parameters for `rows`, in its order (the bodies, then the arrays). Text columns
 * go through `arrayParameter`; numbers, booleans, UUIDs and times (epoch milliseconds) need no quotes or escapes
 * in array text, and the one of them that may be absent (`response_event_id`) is NULL there.
 */
export function insertParameters(rows: NewRequestLogRow[]): [unknown, ...unknown[]] {
  const [bodies, ...bounds] = bodyParameters(rows);
  const columns = ARRAY_COLUMNS.map(() => new Array<unknown>(rows.length));
  rows.forEach((row, i) => arrayValues(row).forEach((value, c) => (columns[c]![i] = value)));
  const arrays = columns.map((values, c) =>
    ARRAY_COLUMNS[c]![1] === 'text' ? arrayParameter(values) : `{${values.map((v) => v ?? 'NULL').join(',')}}`,
  );
  return [bodies, ...arrays, ...bounds];
}

/**
 * Multi-row inserts, each statement its own transaction: run on the pool, not inside a
 * transaction, a statement is one round trip where `begin`, the insert and `commit` were three
 * (the flusher's share of the server's CPU per logged request; docs/benchmarks.md). A flush of
 * more than INSERT_CHUNK rows may be written in part: the flusher retries what failed, and
 * `retry` skips the rows already there (primary key: tenant_id, environment, id), as after a
 * commit whose answer was lost. Nobody waits on these rows, and the log is best-effort already
 * (held in memory between flushes), so their commit does not wait for the WAL to reach the disk:
 * a flush never adds a disk flush beside the money path's commits, which do wait (PostgreSQL
 * writes it within three `wal_writer_delay`s; a crash may lose the last flushes, as it loses the
 * buffer): the insert sets `synchronous_commit` off for its own transaction, the statement.
 */
export async function insertMany(db: Queryable, rows: NewRequestLogRow[], retry = false): Promise<void> {
  const statement = retry ? insertRowsAgain : insertRows;
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    await statement.execute(db, ...insertParameters(rows.slice(i, i + INSERT_CHUNK)));
  }
}

export interface RequestLogFilter extends PageQuery {
  status_class?: number;
  method?: string;
  path?: string;
  request_id?: string;
}

/** The summary columns of a list (bodies are read only on the detail page). */
const SUMMARY = [
  'id',
  'tenant_id',
  'environment',
  'request_id',
  'method',
  'path',
  'query',
  'status',
  'status_class',
  'duration_ms',
  'idempotency_key',
  'idempotency_replayed',
  'key_prefix',
  'created_at',
] as const;
export type RequestLogSummaryRow = Pick<RequestLogRow, (typeof SUMMARY)[number]>;

export async function list(db: Queryable, scope: Scope, filter: RequestLogFilter): Promise<Page<RequestLogSummaryRow>> {
  let base = scoped(db, 'api_request_log', scope);
  if (filter.request_id) {
    // A request id the server made is the row's id (migration 1265); one a client sent, which may
    // be a UUID too, is in request_id (the partial index's rows).
    const requestId = filter.request_id;
    base = isUuid(requestId)
      ? base.where((eb) =>
          eb.or([eb('request_id', '=', requestId), eb.and([eb('id', '=', requestId.toLowerCase()), eb('request_id', 'is', null)])]),
        )
      : base.where('request_id', '=', requestId);
  }
  if (filter.status_class) {
    base = base.where('status_class', '=', filter.status_class);
    // The status index holds only the answers that were not 2xx (migration 1103). The planner
    // uses a partial index only when the query states its predicate, as a literal: a parameter's
    // value is not known when a generic plan is made. A 2xx filter walks the primary key.
    if (filter.status_class !== 2) base = base.where('status_class', '<>', sql.lit(2));
  }
  if (filter.method) base = base.where('method', '=', filter.method);
  if (filter.path) {
    // A prefix match: `/v1/transfers` finds `/v1/transfers/…` too. LIKE's wildcards are escaped.
    // The pattern is a constant of the statement, not a parameter: PostgreSQL turns a LIKE prefix
    // into a range of the path index only in a plan made with its value, and a prepared
    // statement's plan can become generic (made without it), which walks the business's whole
    // log, newest first, for a path that is rare or absent.
    base = base.where('path', 'like', stringConstant(`${escapeLike(filter.path)}%`));
  }
  return paginate<RequestLogSummaryRow>(db, base, 'api_request_log.id', filter, (qb) => qb.select([...SUMMARY]));
}

/** A logged request, with the type and data of the event its answer points at (null for none). */
export async function find(
  db: Queryable,
  scope: Scope,
  id: string,
): Promise<(RequestLogRow & { response_event: { type: string; data: unknown } | null }) | undefined> {
  return scoped(db, 'api_request_log', scope)
    .selectAll()
    .select(
      sql<{ type: string; data: unknown } | null>`(select json_build_object('type', e.event_type, 'data', e.event_data)
        from events e where e.id = api_request_log.response_event_id)`.as('response_event'),
    )
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * Deletes, for each business given, up to `perTenant` of its rows older than its own cutoff id
 * (ids are time-ordered; each probe walks the primary key, tenant_id, environment, id). Returns
 * how many rows of each business went.
 */
export async function deleteBeforePerTenant(
  db: Queryable,
  cutoffs: { tenantId: string; cutoffId: string }[],
  perTenant: number,
): Promise<Map<string, number>> {
  const deleted = new Map<string, number>();
  if (cutoffs.length === 0) return deleted;
  const values = sql.join(cutoffs.map((c) => sql`(${c.tenantId}::uuid, ${c.cutoffId}::uuid)`));
  // eslint-disable-next-line no-restricted-syntax -- set-based over many businesses (the retention worker), each with its own cutoff
  const result = await sql<{ tenant_id: string }>`
    delete from api_request_log where (tenant_id, environment, id) in (
      select old.tenant_id, old.environment, old.id from (values ${values}) as t (tenant_id, cutoff)
      cross join lateral (
        select l.tenant_id, l.environment, l.id from api_request_log l
        where l.tenant_id = t.tenant_id and l.environment in ('sandbox', 'live') and l.id < t.cutoff
        limit ${perTenant}) as old)
    returning tenant_id`.execute(db);
  for (const row of result.rows) deleted.set(row.tenant_id, (deleted.get(row.tenant_id) ?? 0) + 1);
  return deleted;
}
