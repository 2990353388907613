import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';

/**
 * Issue #15: a property-based fuzz test generated from our own `/v1/openapi.json`. Every
 * operation gets malformed requests (NUL and lone surrogates in text, wrong types, unknown
 * fields, deep nesting, non-objects, broken JSON, huge values, bad query and path parameters,
 * other businesses' ids). Properties: no response is 5xx, and a request answered 4xx changes
 * nothing (a checksum of every table but the idempotency records, which store 404/409/422
 * outcomes by docs/api-rules.md#idempotency, is the same before and after).
 */

type JsonSchema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  format?: string;
};
interface Operation {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  pathParams: string[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | null;
}

const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 25);
/**
 * Bookkeeping that a 4xx may legitimately write or that no request touches: stored idempotent
 * outcomes (docs/api-rules.md#idempotency), the API request log (every request is logged, refused ones too), the
 * process heartbeat behind idempotency leases, migrations and dashboard sessions.
 */
const UNCHECKED_TABLES = new Set(['idempotency_keys', 'api_request_log', 'process_instances', 'schema_migrations', 'dashboard_sessions']);

let t: TestApp;
let key: string;
const operations: Operation[] = [];
let components: Record<string, JsonSchema> = {};
let tables: string[] = [];
const ownIds: string[] = [];
const foreignIds: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ RATE_LIMIT_PER_MINUTE: 1_000_000 });
  const biz = await t.tenant('Fuzz Target');
  key = biz.sandbox.secret_key;
  const api = clientFor(t, key);
  // Real resources, so ids in paths and bodies sometimes name something that exists.
  const customer = (await api.post('/v1/customers', johnDoe())).body.data.id;
  const account = (await api.post('/v1/accounts', { currency: 'NGN', label: 'fuzz', customer_id: customer })).body.data.id;
  await api.post(`/v1/simulations/accounts/${account}/fund`, { amount: '100.00' });
  const endpoint = (await api.post('/v1/webhooks/endpoints', { url: 'https://example.com/fuzz' })).body.data.id;
  const card = (await api.post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '123' })).body.data
    .id;
  ownIds.push(customer, account, endpoint, card);
  const otherApi = clientFor(t, (await t.tenant('Fuzz Other')).sandbox.secret_key);
  const otherCustomer = (await otherApi.post('/v1/customers', johnDoe())).body.data.id;
  foreignIds.push(
    otherCustomer,
    (await otherApi.post('/v1/accounts', { currency: 'NGN', label: 'o', customer_id: otherCustomer })).body.data.id,
  );
  for (const id of [...ownIds, ...foreignIds]) expect(id).toMatch(/^[0-9a-f-]{36}$/);

  const doc = (await t.request('GET', '/v1/openapi.json')).body;
  components = doc.components?.schemas ?? {};
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const params: any[] = op.parameters ?? [];
      operations.push({
        method: method.toUpperCase() as Operation['method'],
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'
    order by table_name`.execute(t.db);
  tables = rows.map((r) => r.table_name).filter((n) => !UNCHECKED_TABLES.has(n));
});
afterAll(() => t?.close());

/** Row count and a hash of the rows of every checked table, in one statement. */
async function checksum(): Promise<Record<string, string>> {
  const parts = tables.map(
    (table) =>
      sql`select ${table}::text as t, count(*)::int as n, md5(string_agg(x::text, '|' order by x::text)) as h from ${sql.table(table)} x`,
  );
  const { rows } = await sql<{ t: string; n: number; h: string | null }>`${sql.join(parts, sql` union all `)}`.execute(t.db);
  return Object.fromEntries(rows.map((r) => [r.t, `${r.n}:${r.h ?? ''}`]));
}

function resolve(schema: JsonSchema | undefined): JsonSchema {
  let s = schema ?? {};
  for (let i = 0; i < 10 && s.$ref; i++) s = components[s.$ref.split('/').pop()!] ?? {};
  return s;
}

/** A plausible value for a schema (so a single mutation is what makes the request wrong). */
function plausible(schema: JsonSchema | undefined, depth = 0): unknown {
  const s = resolve(schema);
  if (s.enum && s.enum.length > 0) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf;
  if (alt && alt.length > 0) return plausible(alt[0], depth);
  const type = Array.isArray(s.type) ? s.type.find((x) => x !== 'null') : s.type;
  if (type === 'object' || s.properties) {
    if (depth > 4) return {};
    return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, plausible(v, depth + 1)]));
  }
  if (type === 'array') return depth > 4 ? [] : [plausible(s.items, depth + 1)];
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return true;
  if (s.format === 'uuid') return ownIds[0];
  if (s.format === 'email') return 'fuzz@example.com';
  if (s.format === 'date') return '2020-01-01';
  if (s.format === 'date-time') return '2020-01-01T00:00:00Z';
  return 'fuzz';
}

const nasty = fc.constantFrom(
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x\udfffy',
  '',
  ' ',
  'x'.repeat(20_000),
  "' or 1=1 --",
  '-1',
  '1e400',
  '99999999999999999999999999',
  'NaN',
  '0x10',
  '2020-13-45',
  '\u202e\u0301',
  '../../etc/passwd',
);
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  nasty,
  fc.string({ maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(true, false, null, 1e308, -1e308, Number.MAX_SAFE_INTEGER, -0),
  fc.constantFrom(...['00000000-0000-7000-8000-000000000000']),
  fc.constant(undefined).map(() => foreignIds[0]),
  fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/** Mutates one leaf (or adds one) of a plausible body, along a path chosen by `pick`. */
function mutate(body: unknown, pick: number, value: unknown, addUnknown: boolean): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return value;
  const copy = structuredClone(body) as Record<string, unknown>;
  const keys = Object.keys(copy);
  if (addUnknown || keys.length === 0) {
    copy[`fuzz_${pick % 997}`] = value;
    return copy;
  }
  const k = keys[pick % keys.length]!;
  const inner = copy[k];
  copy[k] =
    inner !== null && typeof inner === 'object' && !Array.isArray(inner) && pick % 3 === 0
      ? mutate(inner, Math.floor(pick / 7), value, false)
      : value;
  return copy;
}

const deepText = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

type BodyPlan = { kind: 'json'; value: unknown } | { kind: 'raw'; text: string } | { kind: 'none' };

// Never an id of this business: a path attack must not name something the request may change.
const pathValue = fc.oneof(
  fc.constantFrom(0, 1).map((i) => foreignIds[i]!),
  fc.constantFrom(
    '00000000-0000-7000-8000-000000000000',
    'not-an-id',
    'a%00b',
    '%FF%FE',
    '%E2%82',
    'x'.repeat(600),
    '%2e%2e',
    '1',
    '-1',
    '%20',
  ),
  fc.string({ minLength: 1, maxLength: 12 }).map((s) => encodeURIComponent(s)),
);
const queryValue = fc.oneof(
  fc.constantFrom('a%00b', '%FF', '%E2%82', '-1', '0', '1e400', '99999999999999999999', 'x'.repeat(2000), '', '%27%20or%201%3D1', 'true'),
  fc.string({ maxLength: 10 }).map((s) => encodeURIComponent(s)),
);

function planFor(op: Operation) {
  const strategies =
    op.method === 'GET' ? ['query', 'path'] : ['nul', 'surrogate', 'wrongType', 'unknown', 'deep', 'notObject', 'badJson', 'path', 'noKey'];
  return fc.record({
    strategy: fc.constantFrom(...strategies),
    pick: fc.nat(),
    value: wrongValue,
    path: fc.array(pathValue, { minLength: 2, maxLength: 2 }),
    query: fc.array(fc.tuple(fc.nat(), queryValue), { minLength: 1, maxLength: 3 }),
  });
}

function build(op: Operation, plan: { strategy: string; pick: number; value: unknown; path: string[]; query: [number, string][] }) {
  // Path parameters: a real id of this business unless the strategy attacks the path.
  let url = op.path;
  op.pathParams.forEach((name, i) => {
    const v = plan.strategy === 'path' ? plan.path[i % plan.path.length]! : ownIds[(plan.pick + i) % ownIds.length]!;
    url = url.replace(`{${name}}`, v);
  });
  // Query parameters are fuzzed on every request (routes that take none ignore unknown ones).
  {
    const names = op.query.length > 0 ? op.query.map((q) => q.name) : ['q'];
    url += '?' + plan.query.map(([n, v]) => `${names[n % names.length]}=${v}`).join('&');
  }
  const base = op.body ? plausible(op.body) : undefined;
  let body: BodyPlan = { kind: 'none' };
  if (op.method !== 'GET') {
    switch (plan.strategy) {
      case 'nul':
        body = { kind: 'json', value: mutate(base ?? {}, plan.pick, `fu\u0000zz`, false) };
        break;
      case 'surrogate':
        body = { kind: 'raw', text: JSON.stringify(mutate(base ?? {}, plan.pick, 'SURROGATE', false)).replace('"SURROGATE"', '"\\udc00"') };
        break;
      case 'wrongType':
        body = { kind: 'json', value: mutate(base ?? {}, plan.pick, plan.value ?? null, false) };
        break;
      case 'unknown':
        body = { kind: 'json', value: mutate(base ?? {}, plan.pick, plan.value ?? 1, true) };
        break;
      case 'deep':
        body = { kind: 'raw', text: deepText(200 + (plan.pick % 4000)) };
        break;
      case 'notObject':
        body = { kind: 'json', value: [plan.value ?? null] };
        break;
      case 'badJson':
        body = { kind: 'raw', text: JSON.stringify(base ?? {}).slice(0, -1 - (plan.pick % 3)) + '\u0000' };
        break;
      default:
        body = base === undefined ? { kind: 'none' } : { kind: 'json', value: base };
    }
  }
  return { url, body };
}

describe('fuzzing every operation of /v1/openapi.json', () => {
  it('covers every operation', () => {
    expect(operations.length).toBeGreaterThan(90);
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) expect(operations.some((o) => o.method === method)).toBe(true);
  });

  it('never answers 5xx, and a 4xx changes no state', async () => {
    let requests = 0;
    let checkedRequests = 0;
    const statuses = new Map<number, number>();
    for (const op of operations) {
      let before = await checksum();
      let successes = 0;
      await fc.assert(
        fc.asyncProperty(planFor(op), async (plan) => {
          const { url, body } = build(op, plan);
          const headers: Record<string, string> = {};
          if (plan.strategy !== 'noKey') headers['api-key'] = key;
          if (op.method === 'POST') headers['idempotency-key'] = newId();
          let payload: string | undefined;
          if (body.kind !== 'none') {
            headers['content-type'] = 'application/json';
            payload = body.kind === 'json' ? JSON.stringify(body.value) : body.text;
          }
          const res = await t.app.inject({ method: op.method, url, headers, ...(payload !== undefined ? { payload } : {}) });
          requests++;
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode >= 500) throw new Error(`${op.method} ${url} → ${res.statusCode} ${res.body.slice(0, 300)}`);
          if (res.statusCode < 400 && op.method !== 'GET') successes++;
        }),
        { numRuns: RUNS_PER_OPERATION, endOnFailure: true },
      );
      const after = await checksum();
      if (successes === 0) {
        checkedRequests += RUNS_PER_OPERATION;
        const changed = Object.keys(after).filter((k) => after[k] !== before[k]);
        expect(changed, `${op.method} ${op.path}: 4xx requests changed ${changed.join(', ')}`).toEqual([]);
      }
      before = after;
    }
    // Thousands of requests, nearly all of them checked for state changes.
    expect(requests).toBeGreaterThanOrEqual(operations.length * RUNS_PER_OPERATION);
    expect(checkedRequests / requests).toBeGreaterThan(0.8);
    console.log(
      `fuzz: ${requests} requests, ${checkedRequests} checked for state changes, statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );
  }, 180_000);
});
