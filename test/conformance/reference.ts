import { readdirSync, readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';

/**
 * The reference OpenAPI files (fixtures beside this file, MIT) as test data: their request
 * examples, and validators of our answers against their response schemas under the contract's
 * rules (see `normalize`).
 */
const DIR = new URL('./reference/', import.meta.url);
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

type Json = Record<string, unknown>;

export interface RequestExample {
  file: string;
  method: string;
  path: string;
  name: string;
  body: unknown;
}

function loadDocs(): Map<string, Json> {
  const docs = new Map<string, Json>();
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    docs.set(file, parse(readFileSync(new URL(file, DIR), 'utf8')) as Json);
  }
  return docs;
}

export const docs = loadDocs();

function operations(doc: Json): [string, string, Json][] {
  const paths = (doc.paths ?? {}) as Record<string, Json>;
  return Object.entries(paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((m) => [path, m.toUpperCase(), item[m] as Json] as [string, string, Json]),
  );
}

/** Every JSON request example of every operation, named `<file> <METHOD> <path> <example>`. */
export function requestExamples(): RequestExample[] {
  const out: RequestExample[] = [];
  for (const [file, doc] of docs) {
    for (const [path, method, op] of operations(doc)) {
      const content = ((op.requestBody as Json | undefined)?.content ?? {}) as Record<string, Json>;
      const json = content['application/json'];
      if (!json) continue;
      for (const [name, ex] of Object.entries((json.examples ?? {}) as Record<string, Json>))
        out.push({ file, method, path, name, body: ex.value });
      if ('example' in json) out.push({ file, method, path, name: 'example', body: json.example });
    }
  }
  return out;
}

/** Every operation of the reference, `<METHOD> <path>`, with the file that describes it. */
export function referenceOperations(): { file: string; method: string; path: string }[] {
  return [...docs].flatMap(([file, doc]) => operations(doc).map(([path, method]) => ({ file, method, path })));
}

const DECIMAL = /^-?\d+(\.\d+)?$/;
/** Properties that carry money or a rate (docs/api-rules.md#formats: decimal strings). */
const MONEY = /(amount|balance|limit|fee|rate|volume|remuneration)/;
/** The reference's crypto fields: out of scope (contract preamble), so never required of us. */
const CRYPTO = new Set(['blockchain_network', 'wallet_address', 'wallet_id', 'crypto_asset', 'tx_hash', 'blockchain_memo', 'network']);
/** Card statuses of docs/api-rules.md#closed-lists beyond the reference's enum. */
const CARD_STATUSES = ['inactive', 'active', 'freeze', 'blocked', 'lost', 'stolen'];

const decimalOr = (types: string[], rest: Json) => ({
  ...rest,
  anyOf: [...types.map((t) => ({ type: t })), { type: 'string', format: 'decimal' }],
});

/**
 * The contract's reading of a reference schema (applied to the whole document, examples left
 * alone):
 * - `type: number`, and `type: integer` on a money or rate property, also admit a decimal string:
 *   money amounts and rates are decimal strings (docs/api-rules.md#formats, institution bounds too);
 * - `nullable: true` (the OpenAPI 3.0 spelling some files use) admits `null`;
 * - crypto fields are never required (fiat only), card status enums take §14's closed list;
 * - `total_items`/`total_pages` may be null (docs/api-rules.md#lists: beyond 10,000 matches);
 * - a `oneOf` is read as `anyOf`: the reference's alternatives overlap (a success body matches
 *   both its full and its partial shape), which no answer could satisfy exactly once;
 * - otherwise `required` stays: an optional field may be absent, a required one may not.
 */
function normalize(node: unknown, name = ''): unknown {
  if (Array.isArray(node)) return node.map((n) => normalize(n));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === 'example' || k === 'examples') out[k] = v;
    else if (k === 'properties' && v && typeof v === 'object') {
      out[k] = Object.fromEntries(Object.entries(v as Json).map(([p, sch]) => [p, normalize(sch, p)]));
    } else if (k === 'oneOf') out.anyOf = normalize(v);
    else out[k] = normalize(v);
  }
  if (Array.isArray(out.required)) out.required = (out.required as string[]).filter((r) => !CRYPTO.has(r));
  if (Array.isArray(out.enum) && out.enum.includes('freeze')) out.enum = [...new Set([...(out.enum as string[]), ...CARD_STATUSES])];
  const nullable = out.nullable === true || name === 'total_items' || name === 'total_pages';
  delete out.nullable;
  if (out.type === undefined) return nullable ? { anyOf: [out, { type: 'null' }] } : out;
  const types = [out.type].flat() as string[];
  if (nullable && !types.includes('null')) types.push('null');
  const money = types.includes('number') || (types.includes('integer') && MONEY.test(name));
  if (money) {
    const { type: _t, format: _f, minimum: _min, maximum: _max, exclusiveMinimum: _emin, exclusiveMaximum: _emax, ...rest } = out;
    return decimalOr(types, rest);
  }
  out.type = types.length === 1 ? types[0] : types;
  return out;
}

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => void;

const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addFormat('decimal', DECIMAL);
for (const f of [
  'int32',
  'int64',
  'float',
  'double',
  'binary',
  'byte',
  'base64',
  'password',
  'ipv4 or ipv6',
  'phone',
  'iso-4217',
  'iso-3166',
]) {
  if (!ajv.formats[f]) ajv.addFormat(f, true);
}
for (const [file, doc] of docs) ajv.addSchema(normalize(doc) as Json, file);

const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const cache = new Map<string, ValidateFunction | null>();

/** The validator of an operation's 2xx JSON answer, or null when the reference gives no schema. */
export function responseValidator(file: string, method: string, path: string, status: number): ValidateFunction | null {
  const key = `${file} ${method} ${path} ${status}`;
  if (cache.has(key)) return cache.get(key) ?? null;
  const op = ((docs.get(file)?.paths as Record<string, Json>)[path] as Json)[method.toLowerCase()] as Json;
  const responses = op.responses as Record<string, Json>;
  const code = [String(status), '200', '201', '202'].find((c) => responses[c]);
  const content = code ? ((responses[code] as Json).content as Record<string, Json> | undefined) : undefined;
  let validate: ValidateFunction | null = null;
  if (code && content?.['application/json']?.schema) {
    validate = ajv.compile({
      $ref: `${file}#/paths/${pointer(path)}/${method.toLowerCase()}/responses/${code}/content/application~1json/schema`,
    });
  }
  cache.set(key, validate);
  return validate;
}

export function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`).join('\n');
}
