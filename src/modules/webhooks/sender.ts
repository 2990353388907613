import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import type { LookupFunction } from 'node:net';

export interface SendOptions {
  timeoutMs: number;
  /** How much of the response body is read and kept. */
  maxResponseBytes: number;
  /** A checked DNS lookup (live); the default resolver otherwise. */
  lookup?: LookupFunction;
  /** Aborts the request (a worker stopping); the result then carries an `aborted` error. */
  signal?: AbortSignal;
}

export interface SendResult {
  statusCode: number | null;
  headers: Record<string, string> | null;
  excerpt: string | null;
  error: string | null;
  durationMs: number;
  /** From a Retry-After header (seconds or HTTP date), in ms. */
  retryAfterMs: number | null;
}

const MAX_HEADERS = 30;
const MAX_HEADER_VALUE = 256;

function keptHeaders(raw: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw).slice(0, MAX_HEADERS)) {
    if (name === 'set-cookie' || value === undefined) continue;
    out[name] = (Array.isArray(value) ? value.join(', ') : value).slice(0, MAX_HEADER_VALUE);
  }
  return out;
}

export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function describe(err: NodeJS.ErrnoException): string {
  if (err.code === 'EBLOCKEDADDRESS') return err.message;
  return err.code ? `${err.code}: ${err.message}`.slice(0, 500) : err.message.slice(0, 500);
}

/**
 * Reads the receiver's answer up to `maxBytes` and finishes with it; the function returned
 * finishes with what has come so far (what a timeout after the status line keeps).
 */
function readResponse(res: http.IncomingMessage, maxBytes: number, finish: (result: Omit<SendResult, 'durationMs'>) => void): () => void {
  const chunks: Buffer[] = [];
  let size = 0;
  // The status is what counts; a body that stalls after it is kept as far as it came.
  const complete = () =>
    finish({
      statusCode: res.statusCode ?? null,
      headers: keptHeaders(res.headers),
      excerpt: size > 0 ? Buffer.concat(chunks).toString('utf8') : null,
      error: null,
      retryAfterMs: parseRetryAfter(res.headers['retry-after']),
    });
  res.on('data', (chunk: Buffer) => {
    if (size < maxBytes) {
      const part = chunk.subarray(0, maxBytes - size);
      chunks.push(part);
      size += part.length;
    }
    if (size >= maxBytes) complete();
  });
  res.on('end', complete);
  res.on('error', complete);
  res.on('close', complete);
  return complete;
}

/**
 * One webhook POST. Redirects are not followed (node:http never does), the response body is
 * read up to a limit, and the whole exchange is bounded by `timeoutMs`. Never throws: a failure
 * is a result with `error` set, recorded as an attempt.
 */
export function postJson(url: string, body: string, headers: Record<string, string>, options: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const target = new URL(url);
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    let onTimeout = () =>
      finish({ statusCode: null, headers: null, excerpt: null, error: `timed out after ${options.timeoutMs} ms`, retryAfterMs: null });
    const finish = (result: Omit<SendResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      req.destroy();
      resolve({ ...result, durationMs: Math.round(performance.now() - started) });
    };
    const timer = setTimeout(() => onTimeout(), options.timeoutMs);
    const req = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        agent: false,
        ...(options.lookup ? { lookup: options.lookup } : {}),
      },
      (res) => {
        onTimeout = readResponse(res, options.maxResponseBytes, finish);
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) =>
      finish({ statusCode: null, headers: null, excerpt: null, error: describe(err), retryAfterMs: null }),
    );
    function onAbort() {
      finish({ statusCode: null, headers: null, excerpt: null, error: 'aborted: worker stopping', retryAfterMs: null });
    }
    if (options.signal?.aborted) return onAbort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    req.end(body);
  });
}
