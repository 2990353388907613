import { REQUEST_EXAMPLES } from './openapi-examples.js';

/**
 * The last pass over the generated OpenAPI document, on what the route schemas cannot say:
 * - every authenticated POST declares the `Idempotency-Key` header it cannot run without, so a
 *   reference page or a generated client sends one;
 * - every operation with a body carries a request example (openapi-examples.ts);
 * - destinations the API refuses (crypto: the product is fiat only) are not listed as accepted
 *   values, and the reference's crypto fields that are accepted and ignored say so;
 * - a `servers` entry, so "try it" pages know where to send requests.
 */

/** Enum values the schemas accept so that the service can answer a precise 400, never a success. */
const REFUSED_VALUES = new Set(['crypto_wallet', 'internal_crypto_wallet', 'external_crypto_wallet']);
/** The reference's crypto fields: accepted and ignored (contract: its own clients send them). */
const IGNORED_FIELDS = new Set(['blockchain_network', 'wallet_address', 'crypto_asset', 'blockchain_memo', 'wallet_id']);
const IGNORED_NOTE = 'Accepted and ignored: the service is fiat only.';

export const IDEMPOTENCY_KEY_EXAMPLE = 'replace-with-a-fresh-key';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Walks every schema object of the document, fixing refused enum values and ignored fields in place. */
function cleanSchemas(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) cleanSchemas(item);
    return;
  }
  if (!isObject(node)) return;
  if (Array.isArray(node.enum) && node.enum.some((v) => REFUSED_VALUES.has(v as string))) {
    node.enum = node.enum.filter((v) => !REFUSED_VALUES.has(v as string));
  }
  if (isObject(node.properties)) {
    for (const [name, prop] of Object.entries(node.properties)) {
      if (IGNORED_FIELDS.has(name) && isObject(prop)) {
        prop.deprecated = true;
        prop.description = IGNORED_NOTE;
      }
    }
  }
  for (const value of Object.values(node)) cleanSchemas(value);
}

export interface PolishOptions {
  /** Where the API is reached; a relative `/` when the public address is not configured. */
  serverUrl?: string | undefined;
}

export function polishDocument<T>(document: T, options: PolishOptions = {}): T {
  const doc = document as Json;
  doc.servers = [
    { url: options.serverUrl ?? '/', description: options.serverUrl ? 'This deployment' : 'The server this document came from' },
  ];
  cleanSchemas(doc.components);
  const paths = (doc.paths ?? {}) as Record<string, Record<string, Json>>;
  for (const [path, operations] of Object.entries(paths)) {
    cleanSchemas(operations);
    for (const [method, operation] of Object.entries(operations)) {
      if (!isObject(operation)) continue;
      if (method === 'post' && path.startsWith('/v1/')) {
        const parameters = (operation.parameters ?? []) as Json[];
        if (!parameters.some((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key')) {
          parameters.push({
            in: 'header',
            name: 'Idempotency-Key',
            required: true,
            description:
              'A key unique to this request (a UUID is a good choice), 1-255 printable ASCII characters. The same key with the same request replays the stored answer.',
            schema: { type: 'string', minLength: 1, maxLength: 255 },
            example: IDEMPOTENCY_KEY_EXAMPLE,
          });
        }
        operation.parameters = parameters;
      }
      const content = (operation.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
      const json = content?.['application/json'];
      const example = REQUEST_EXAMPLES[`${method.toUpperCase()} ${path}`];
      if (json && example !== undefined) json.example = example;
    }
  }
  return document;
}

/**
 * A 3.1 schema said in OpenAPI 3.0's words (`nullable` instead of a `null` type, `enum` instead
 * of `const`), in place. Only for the reference page: Swagger UI renders a 3.0 document several
 * times faster than a 3.1 one, and the schemas mean the same to a reader.
 */
function downgradeSchemas(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) downgradeSchemas(item);
    return;
  }
  if (!isObject(node)) return;
  for (const value of Object.values(node)) downgradeSchemas(value);
  if (node.type === 'null') {
    delete node.type;
    node.nullable = true;
    node.enum = [null];
  }
  if (Array.isArray(node.type)) {
    const types = node.type.filter((t) => t !== 'null');
    if (types.length < node.type.length) node.nullable = true;
    if (types.length === 1) node.type = types[0];
    else {
      delete node.type;
      node.anyOf = types.map((type) => ({ type }));
    }
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = node[key];
    if (!Array.isArray(list)) continue;
    const rest = list.filter((s) => !(isObject(s) && s.type === 'null'));
    if (rest.length === list.length) continue;
    node.nullable = true;
    if (rest.length === 1 && isObject(rest[0])) {
      delete node[key];
      Object.assign(node, rest[0], { nullable: true });
    } else node[key] = rest;
  }
  if ('const' in node) {
    node.enum = [node.const];
    delete node.const;
  }
  delete node.propertyNames;
  if (typeof node.exclusiveMinimum === 'number') {
    node.minimum = node.exclusiveMinimum;
    node.exclusiveMinimum = true;
  }
  if (typeof node.exclusiveMaximum === 'number') {
    node.maximum = node.exclusiveMaximum;
    node.exclusiveMaximum = true;
  }
}

/**
 * The document as the reference page gets it: the same operations in OpenAPI 3.0 (above), with each distinct error
 * answer stated once under `components.responses` and referred to (most of the document is the
 * per-route error envelopes, the same few dozen over and over, and a renderer's cost grows with
 * the document's size).
 */
export function referenceDocument(document: unknown): Json {
  const copy = structuredClone(document) as Json;
  copy.openapi = '3.0.3';
  downgradeSchemas(copy.components);
  downgradeSchemas(copy.paths);
  const components = (copy.components ??= {}) as Json;
  const shared = (components.responses ??= {}) as Record<string, unknown>;
  const names = new Map<string, string>();
  for (const operations of Object.values((copy.paths ?? {}) as Record<string, Record<string, Json>>)) {
    for (const operation of Object.values(operations)) {
      const responses = operation.responses as Record<string, unknown> | undefined;
      if (!isObject(responses)) continue;
      for (const [status, answer] of Object.entries(responses)) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const text = JSON.stringify(answer);
        let name = names.get(text);
        if (!name) {
          name = `Error${status}_${names.size + 1}`;
          names.set(text, name);
          shared[name] = answer;
        }
        responses[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  return copy;
}

/**
 * A copy of the reference document with the Idempotency-Key pre-filled with a fresh value, so
 * "send" works at once, and a new one on every load of the page.
 */
export function withFreshIdempotencyKeys(document: Json, freshKey: () => string): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const [path, operations] of Object.entries((document.paths ?? {}) as Record<string, Record<string, Json>>)) {
    const post = operations.post;
    if (!isObject(post) || !Array.isArray(post.parameters)) {
      paths[path] = operations;
      continue;
    }
    const parameters = (post.parameters as Json[]).map((p) =>
      p.in === 'header' && p.name === 'Idempotency-Key' ? { ...p, example: freshKey() } : p,
    );
    paths[path] = { ...operations, post: { ...post, parameters } };
  }
  return { ...document, paths };
}
