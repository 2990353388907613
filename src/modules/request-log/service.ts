import type { CapturedRequest, RequestLogSink } from '../../core/request-log.js';
import type { Queryable } from '../../db/client.js';
import type { Page } from '../../db/pagination.js';
import { newId, uuidv7LowerBound } from '../../lib/ids.js';
import { redactJsonText, redactString, redactValue } from '../../lib/redact.js';
import { pageOfTenants } from '../tenants/service.js';
import * as repo from './repo.js';
import type { Scope } from '../../core/context.js';

/**
 * The API request log. The HTTP layer hands over each finished /v1 request with `record`, which
 * only appends to a bounded in-memory buffer (no I/O, no JSON work, never throws). A background
 * flusher turns the buffer into rows (redaction and serialization happen there, off the
 * request's path) and writes them with multi-row inserts. When the buffer is full (the database
 * is slow or down) new entries are dropped and counted: the log is best-effort, the API is not.
 */

export interface RequestLogOptions {
  /** Most entries held in memory; beyond, new ones are dropped. */
  maxBuffered: number;
  /** How often the flusher runs. */
  flushIntervalMs: number;
  /** Entries turned into rows and written per statement. */
  chunk: number;
  /** Longest stored body (characters); longer ones are cut. */
  maxBodyChars: number;
  onError?: (err: unknown) => void;
}

/**
 * Small, frequent flushes: redaction, serialization and the insert's parameters are synchronous
 * work on the server's one thread. A second's worth of requests at once holds it for tens of
 * milliseconds, which every request arriving meanwhile waits for (the tail latency shows it:
 * docs/benchmarks.md#the-figures-behind-the-defaults). A tenth of a second's worth spreads the same work out.
 * A statement's own cost (its round trip, the pool, the driver) is paid per chunk: 500 rows, a
 * few milliseconds of that work, take a fifth of it per row that 100 did, and a flush holds more
 * than 500 only above 5,000 requests a second.
 */
const DEFAULTS: RequestLogOptions = { maxBuffered: 10_000, flushIntervalMs: 100, chunk: 500, maxBodyChars: 16_384 };

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [cut: ${text.length} characters in all]`;
}

/** An answer's text as the log stores it: redacted (its keys unscanned when its writer knew them clean), then cut. */
function storedAnswer(text: string, keysClean: boolean, maxBodyChars: number): string {
  return cut(redactJsonText(text, keysClean), maxBodyChars);
}

/** One buffered request as a row: redacted bodies, bounded sizes. */
export function toRow(entry: CapturedRequest, maxBodyChars: number): repo.NewRequestLogRow {
  const q = entry.url.indexOf('?');
  const requestBody =
    entry.requestBody === undefined || entry.requestBody === null
      ? null
      : typeof entry.requestBody === 'string'
        ? redactString(entry.requestBody)
        : JSON.stringify(redactValue(entry.requestBody));
  return {
    // A request id the server made is the row's id (migration 1265): a UUIDv7 of the arrival too.
    id: (entry.id ??= entry.requestIdMadeHere ? entry.requestId : newIdAt(entry.startedAt)),
    tenant_id: entry.tenantId,
    environment: entry.environment,
    request_id: entry.requestIdMadeHere ? null : entry.requestId.slice(0, 128),
    method: entry.method,
    path: (q < 0 ? entry.url : entry.url.slice(0, q)).slice(0, 2048),
    query: q < 0 ? null : cut(redactString(entry.url.slice(q + 1)), 2048),
    status: entry.status,
    status_class: Math.floor(entry.status / 100),
    duration_ms: Math.max(0, Math.round(entry.durationMs)),
    idempotency_key: entry.idempotencyKey?.slice(0, 255) ?? null,
    idempotency_replayed: entry.replayed,
    key_prefix: entry.keyPrefix,
    request_body: requestBody === null ? null : cut(requestBody, maxBodyChars),
    response_body: entry.responseBody === null ? null : storedAnswer(entry.responseBody, entry.responseKeysClean === true, maxBodyChars),
    response_event_id: entry.responseEventId ?? null,
    created_at: new Date(entry.startedAt),
  };
}

/**
 * A UUIDv7 whose time part is the request's arrival: the log sorts by arrival, and a date filter
 * (ids bounded by uuidv7LowerBound) matches `created_at`.
 */
function newIdAt(ms: number): string {
  const id = newId();
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0').slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}${id.slice(13)}`;
}

export type { CapturedRequest };

export class RequestLog implements RequestLogSink {
  private buffer: CapturedRequest[] = [];
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private readonly options: RequestLogOptions;
  /** Entries dropped because the buffer was full (or a flush failed with no room to keep them). */
  dropped = 0;
  written = 0;

  constructor(
    private readonly db: Queryable,
    options: Partial<RequestLogOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /** Called on the request's path: an append, nothing else. */
  record(entry: CapturedRequest): void {
    if (this.buffer.length >= this.options.maxBuffered) {
      this.dropped++;
      return;
    }
    this.buffer.push(entry);
  }

  get pending(): number {
    return this.buffer.length;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  /** Writes everything buffered so far; flushes run one at a time. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.flushOnce());
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.options.chunk);
      // An entry with an id has been in a flush before (toRow gives it): that flush may have committed.
      const retry = batch.some((e) => e.id !== undefined);
      let rows: repo.NewRequestLogRow[];
      try {
        rows = batch.map((e) => toRow(e, this.options.maxBodyChars));
        await repo.insertMany(this.db, rows, retry);
        this.written += rows.length;
      } catch (err) {
        // Keep what fits for the next flush; each entry keeps its id, and the retried insert skips ids
        // already written, so a retry never doubles a row that did get in.
        const room = this.options.maxBuffered - this.buffer.length;
        this.buffer.unshift(...batch.slice(0, Math.max(0, room)));
        this.dropped += Math.max(0, batch.length - room);
        this.options.onError?.(err);
        return;
      }
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }
}

// ---- reading (the dashboard) ------------------------------------------------------------------

export interface RequestLogSummary {
  id: string;
  request_id: string;
  method: string;
  path: string;
  query: string | null;
  status: number;
  duration_ms: number;
  idempotency_key: string | null;
  idempotency_replayed: boolean;
  key_prefix: string | null;
  created_at: string;
}

export interface RequestLogDetail extends RequestLogSummary {
  request_body: string | null;
  response_body: string | null;
}

function toSummary(r: repo.RequestLogSummaryRow): RequestLogSummary {
  return {
    id: r.id,
    request_id: r.request_id ?? r.id,
    method: r.method,
    path: r.path,
    query: r.query,
    status: r.status,
    duration_ms: r.duration_ms,
    idempotency_key: r.idempotency_key,
    idempotency_replayed: r.idempotency_replayed,
    key_prefix: r.key_prefix,
    created_at: r.created_at.toISOString(),
  };
}

export type RequestLogFilter = repo.RequestLogFilter;

export async function listRequests(db: Queryable, scope: Scope, filter: RequestLogFilter): Promise<Page<RequestLogSummary>> {
  const page = await repo.list(db, scope, filter);
  return { ...page, items: page.items.map(toSummary) };
}

/** An event a logged answer points at: its type and data. */
export type AnswerEvent = { type: string; data: unknown };

/**
 * A logged request with its bodies. An answer that points at its event (migration 1264) is
 * written by `writeAnswer` from the event, as the route wrote it, then redacted and cut as the
 * flusher would have stored it (`storedAnswer`); null when `writeAnswer` knows no such answer.
 */
export async function getRequest(
  db: Queryable,
  scope: Scope,
  id: string,
  writeAnswer: (event: AnswerEvent) => string | null,
): Promise<RequestLogDetail | null> {
  const row = await repo.find(db, scope, id);
  if (!row) return null;
  const answer = row.response_event === null ? null : writeAnswer(row.response_event);
  const responseBody = row.response_body ?? (answer === null ? null : storedAnswer(answer, false, DEFAULTS.maxBodyChars));
  return { ...toSummary(row), request_body: row.request_body, response_body: responseBody };
}

// ---- retention ----------------------------------------------------------------------------------

/** The business setting that overrides REQUEST_LOG_RETENTION_DAYS, and its bounds. */
export const RETENTION_SETTING = 'request_log_retention_days';
export const RETENTION_MIN_DAYS = 1;
export const RETENTION_MAX_DAYS = 90;

export function isRetentionDays(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= RETENTION_MIN_DAYS && (value as number) <= RETENTION_MAX_DAYS;
}

/** How long a business's request log is kept: its own setting, else the configured default. */
export function retentionDaysOf(settings: { [RETENTION_SETTING]?: unknown }, defaultDays: number): number {
  const own = settings[RETENTION_SETTING];
  return isRetentionDays(own) ? own : defaultDays;
}

export interface RetentionOptions {
  /** Businesses looked at per tick. */
  tenantsPerTick: number;
  /** Most rows of one business deleted per tick. */
  rowsPerTenant: number;
}

/**
 * The retention sweep: walks every business in id order, a page per tick, and deletes each one's
 * rows older than its own retention (setting `request_log_retention_days`, else
 * REQUEST_LOG_RETENTION_DAYS). Each deletion is an index probe per business, so a business that
 * keeps 90 days costs nothing to the others. A tick answers true while the sweep has more to do
 * (the next page, or a business with more old rows than one tick deletes); a finished sweep
 * starts over at the next tick.
 */
export class RequestLogRetention {
  private after: string | null = null;
  private readonly options: RetentionOptions;

  constructor(
    private readonly db: Queryable,
    private readonly defaultDays: number,
    options: Partial<RetentionOptions> = {},
  ) {
    this.options = { tenantsPerTick: 50, rowsPerTenant: 1000, ...options };
  }

  async tick(now = new Date()): Promise<boolean> {
    const page = await pageOfTenants(this.db, this.after, this.options.tenantsPerTick);
    const cutoffs = page.map((t) => ({
      tenantId: t.id,
      cutoffId: uuidv7LowerBound(new Date(now.getTime() - retentionDaysOf(t.settings, this.defaultDays) * 86_400_000)),
    }));
    const deleted = await repo.deleteBeforePerTenant(this.db, cutoffs, this.options.rowsPerTenant);
    // A business with more old rows than one tick deletes: the same page again.
    if ([...deleted.values()].some((n) => n >= this.options.rowsPerTenant)) return true;
    if (page.length < this.options.tenantsPerTick) {
      this.after = null;
      return false;
    }
    this.after = page[page.length - 1]!.id;
    return true;
  }
}

/** A whole retention sweep at once (operator commands and tests). */
export async function purgeExpiredRequests(db: Queryable, defaultDays: number, options: Partial<RetentionOptions> = {}): Promise<void> {
  const sweep = new RequestLogRetention(db, defaultDays, options);
  while (await sweep.tick());
}
