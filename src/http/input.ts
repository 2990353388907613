import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseJsonPreservingNumbers } from '../lib/json.js';
import { AppError, type ErrorDetail } from '../core/errors.js';
import { isApiRequest } from './context.js';

/**
 * The one place where client input is screened before any route sees it. PostgreSQL cannot
 * store a NUL character (22021 / 22P05) and every text it gets must be valid UTF-8, so text with
 * either defect is refused here with a 400 naming the field, instead of reaching a query and
 * failing as a 500. JSON bodies are also bounded in nesting depth (a few thousand levels would
 * overflow the stack of every recursive walk: parser, validation, fingerprint), and a route that
 * declares no body refuses a non-empty one, so nothing a client sends is silently ignored.
 */

/** Deeper than any body of this API (the deepest schema is a handful of levels). */
export const MAX_JSON_DEPTH = 32;

// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const NUL_OR_LONE_SURROGATE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function textProblem(value: string): string | null {
  const m = NUL_OR_LONE_SURROGATE.exec(value);
  if (!m) return null;
  return m[0] === '\u0000' ? 'Must not contain a NUL character' : 'Must be valid UTF-8 text';
}

const detail = (field: string, message: string, code = 'invalid_text'): ErrorDetail => ({ field, code, message });

/** Throws 400 validation_failed when the JSON text nests deeper than `max` (scanned, not parsed). */
export function assertJsonDepth(text: string, max = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) {
        throw new AppError('validation_failed', 'The body is nested too deeply', [
          detail('body', `JSON may nest at most ${max} levels`, 'too_deep'),
        ]);
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}

/** Every string (and key) in a parsed JSON value with NUL or a lone surrogate, by dotted path. */
export function jsonTextProblems(value: unknown, path = '', out: ErrorDetail[] = []): ErrorDetail[] {
  if (typeof value === 'string') {
    const problem = textProblem(value);
    if (problem) out.push(detail(path || 'body', problem));
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => jsonTextProblems(v, path ? `${path}.${i}` : String(i), out));
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const field = path ? `${path}.${k}` : k;
      const keyProblem = textProblem(k);
      if (keyProblem) out.push(detail(path || 'body', `A field name: ${keyProblem.toLowerCase()}`));
      else jsonTextProblems(v, field, out);
    }
  }
  return out;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A JSON request body: UTF-8 bytes, bounded depth, exact numbers, clean text. */
export function parseJsonBody(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new AppError('validation_failed', 'The body is not valid UTF-8', [detail('body', 'Must be valid UTF-8 text')]);
  }
  if (text.trim() === '') return undefined;
  assertJsonDepth(text);
  let value: unknown;
  try {
    value = parseJsonPreservingNumbers(text);
  } catch {
    throw new AppError('invalid_json');
  }
  const problems = jsonTextProblems(value);
  if (problems.length > 0) throw new AppError('validation_failed', 'The body has invalid text', problems);
  return value;
}

/** Splits a raw query string and decodes each name and value strictly (invalid UTF-8 throws). */
function queryProblems(rawQuery: string): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? '' : pair.slice(eq + 1);
    const name = strictDecode(rawName);
    const shownName = name ?? lenientDecode(rawName);
    if (name === null || textProblem(name)) {
      out.push(detail('query', 'A parameter name must be valid UTF-8 text without NUL'));
      continue;
    }
    const value = strictDecode(rawValue);
    if (value === null) out.push(detail(shownName, 'Must be valid UTF-8 text'));
    else {
      const problem = textProblem(value);
      if (problem) out.push(detail(shownName, problem));
    }
  }
  return out;
}

function strictDecode(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

function lenientDecode(s: string): string {
  return s.replace(/%(?![0-9a-fA-F]{2})/g, '%25').replace(/%([0-9a-fA-F]{2})/g, (m, hex: string) => {
    const code = parseInt(hex, 16);
    return code >= 0x20 && code < 0x7f ? String.fromCharCode(code) : m;
  });
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

function isEmptyBody(body: unknown): boolean {
  return body === undefined || (body !== null && typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0);
}

/** Query and path parameters of every route, and the body of routes that take none. */
export function screenRequest(request: FastifyRequest): void {
  const url = request.raw.url ?? request.url;
  const q = url.indexOf('?');
  const problems = q < 0 ? [] : queryProblems(url.slice(q + 1));
  for (const [name, value] of Object.entries((request.params ?? {}) as Record<string, unknown>)) {
    const problem = typeof value === 'string' ? textProblem(value) : null;
    if (problem) problems.push(detail(name, problem));
  }
  if (problems.length > 0) throw new AppError('validation_failed', 'Invalid request parameters', problems);

  if (!BODY_METHODS.has(request.method) || !isApiRequest(request)) return;
  if (request.routeOptions.schema?.body !== undefined || isEmptyBody(request.body)) return;
  const body = request.body;
  const details =
    body !== null && typeof body === 'object' && !Array.isArray(body)
      ? Object.keys(body).map((key) => ({ field: key, code: 'unknown_field', message: 'Unknown field' }))
      : [detail('body', 'This operation takes no body', 'invalid')];
  throw new AppError('validation_failed', 'This operation takes no body', details);
}

/** Registers the JSON body parser and the parameter screen on the root instance. */
export function registerInputScreen(app: FastifyInstance): void {
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as Buffer));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
  app.addHook('preValidation', async (request) => screenRequest(request));
}
