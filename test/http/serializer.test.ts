import { inspect } from 'node:util';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { answerKeysKnownClean, answerWriter, serializerCompiler } from '../../src/http/serializer.js';
import { isSensitiveField, redactJsonText } from '../../src/lib/redact.js';
import { sandboxBusiness, startTestApp, type TestApp } from '../harness.js';

/** Every response schema the app compiles a serializer for (recorded by wrapping the compiler). */
const compiled = vi.hoisted(() => [] as { method: string; url: string; status: string; schema: unknown }[]);
vi.mock('../../src/http/serializer.js', async (original) => {
  const actual = await original<typeof import('../../src/http/serializer.js')>();
  return {
    ...actual,
    serializerCompiler: ((route: { method: string; url: string; httpStatus: string; schema: unknown }) => {
      compiled.push({ method: route.method, url: route.url, status: route.httpStatus, schema: route.schema });
      return actual.serializerCompiler(route as never);
    }) as typeof actual.serializerCompiler,
  };
});

function shown(data: unknown): string {
  try {
    return String(JSON.stringify(data));
  } catch {
    return inspect(data);
  }
}

type Outcome = { text: string | undefined } | { error: string };

function outcome(serialize: (data: unknown) => unknown, data: unknown): Outcome {
  try {
    return { text: serialize(data) as string | undefined };
  } catch (err) {
    const e = err as Error & { cause?: unknown };
    return { error: `${e.name}: ${e.message} ${JSON.stringify((e.cause as { issues?: unknown })?.issues ?? null)}` };
  }
}

function bothOf(schema: z.ZodType) {
  const route = { schema, method: 'GET', url: '/t', httpStatus: '200' };
  return { fast: serializerCompiler(route as never), zod: zodSerializerCompiler(route as never) as (data: unknown) => string };
}

// ---- random values shaped like a schema (mostly valid, sometimes not) ------------------------

let seed = 49;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
const STRINGS = [
  '',
  'a',
  'NGN',
  'quote " and \\ backslash',
  'line\nbreak\ttab\u0001',
  'é ✓ 😀',
  '\ud800 lone',
  '1234567890123456',
  '__proto__',
];
const NUMBERS = [0, -0, 1, -7, 1.5, 100.25, 1e21, 2 ** 53, 5e-324];
const WRONG = [undefined, null, 'x', 1, NaN, Infinity, true, [], {}, new Date(0)];

function anyJson(depth = 0): unknown {
  const r = random();
  if (depth > 2 || r < 0.3) return pick([...STRINGS, ...NUMBERS, true, false, null]);
  if (r < 0.45) return pick([undefined, new Date(1e12), { toJSON: () => 'custom' }]);
  if (r < 0.7) return Array.from({ length: Math.floor(random() * 3) }, () => anyJson(depth + 1));
  return Object.fromEntries(
    Array.from({ length: Math.floor(random() * 3) }, () => [pick(['k', 'x', '1', '0', 'b a']), anyJson(depth + 1)]),
  );
}

type Def = { type: string; [k: string]: any };

/** How often a node gets a wrong value or a required member goes missing (set per sample). */
let faults = 0;

function objectValue(def: Def, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(def.shape);
  // Keys in another order than the schema's now and then, and extra keys: the answer uses the schema's order and drops them.
  for (const key of random() < 0.3 ? [...keys].reverse() : keys) {
    const optional = def.shape[key]._zod.optin !== undefined;
    const r = random();
    if (r < (optional ? 0.2 : faults)) continue;
    out[key] = r < (optional ? 0.3 : faults * 2) ? undefined : valueOf(def.shape[key], depth + 1);
  }
  if (random() < 0.3) out[pick(['extra', 'id', '__proto__', '1'])] = anyJson();
  return out;
}

function recordValue(def: Def, depth: number): unknown {
  const out: Record<string, unknown> = random() < 0.2 ? JSON.parse('{"__proto__": 1, "a": 2}') : {};
  for (let i = Math.floor(random() * 4); i > 0; i--) out[pick(['k', 'x', '2', '10', 'é', 'password'])] = valueOf(def.valueType, depth + 1);
  if (random() < faults) (out as Record<symbol, unknown>)[Symbol('s')] = 1;
  if (random() < 0.05) Object.defineProperty(out, 'hidden', { value: 1, enumerable: false });
  return random() < faults ? new (class Thing {})() : out;
}

const FORMATTED: Record<string, string> = {
  uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  datetime: '2026-12-02T06:45:20.123Z',
  date: '2026-12-02',
  email: 'a@example.com',
  url: 'https://example.com/x',
};

function stringValue(def: Def): unknown {
  if (def.format === 'safeint' || def.format === 'int32') return pick([0, 1, -7, 2 ** 53 - 1]);
  if (def.format) return FORMATTED[def.format as string] ?? 'x';
  return pick(STRINGS);
}

/** A value for `schema`: valid most of the time, with a wrong one here and there. */
function valueOf(schema: z.core.$ZodType, depth = 0): unknown {
  if (random() < faults) return pick(WRONG);
  const def = schema._zod.def as Def;
  switch (def.type) {
    case 'string':
      return stringValue(def);
    case 'number':
      return def.format ? stringValue(def) : pick(NUMBERS);
    case 'boolean':
      return random() < 0.5;
    case 'null':
      return null;
    case 'enum':
    case 'literal':
      return pick([...schema._zod.values!]);
    case 'optional':
      return random() < 0.2 ? undefined : valueOf(def.innerType, depth);
    case 'nullable':
      return random() < 0.2 ? null : valueOf(def.innerType, depth);
    case 'default':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return valueOf(def.innerType, depth);
    case 'pipe':
      return valueOf(def.out, depth);
    case 'object':
      return objectValue(def, depth);
    case 'array':
      return depth > 4 ? [] : Array.from({ length: Math.floor(random() * 3) }, () => valueOf(def.element, depth + 1));
    case 'record':
      return recordValue(def, depth);
    case 'union':
      return valueOf(pick(def.options), depth);
    case 'date':
      return new Date(1e12);
    case 'lazy':
      return depth > 4 ? undefined : valueOf(def.getter(), depth);
    default:
      return anyJson();
  }
}

describe('response serializer', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app?.close());

  it("writes every route's answers exactly as Zod's encoding and JSON.stringify did, and refuses what Zod refused", () => {
    // The app's routes (bothOf below compiles more: they are not in this copy).
    const routes = [...compiled];
    expect(routes.length).toBeGreaterThan(100);
    let written = 0;
    const differences: string[] = [];
    for (const route of routes) {
      const { fast, zod } = bothOf(route.schema as z.ZodType);
      for (let i = 0; i < 30; i++) {
        faults = i % 3 === 0 ? 0.02 : 0;
        const data = valueOf(route.schema as z.core.$ZodType);
        const expected = outcome(zod, data);
        const got = outcome(fast, data);
        if (JSON.stringify(got) !== JSON.stringify(expected)) {
          differences.push(
            `${route.method} ${route.url} ${route.status}: ${shown(data)}\n  zod:  ${JSON.stringify(expected)}\n  fast: ${JSON.stringify(got)}`,
          );
        }
        if ('text' in expected) written++;
      }
    }
    expect(differences.slice(0, 3)).toEqual([]);
    // Most generated answers are valid ones, so the comparison is mostly of written text.
    expect(written).toBeGreaterThan(routes.length * 12);
  });

  it("vouches for an answer's keys only when none of them is one the request log hides", () => {
    const routes = [...compiled];
    let clean = 0;
    let unknown = 0;
    for (const route of routes) {
      const { fast } = bothOf(route.schema as z.ZodType);
      for (let i = 0; i < 30; i++) {
        faults = i % 3 === 0 ? 0.02 : 0;
        const got = outcome(fast, valueOf(route.schema as z.core.$ZodType));
        if (!('text' in got) || got.text === undefined) continue;
        if (!answerKeysKnownClean(got.text)) {
          unknown++;
          continue;
        }
        clean++;
        const where = `${route.method} ${route.url} ${route.status}: ${got.text}`;
        expect(sensitiveKeysOf(JSON.parse(got.text)), where).toEqual([]);
        expect(redactJsonText(got.text, true), where).toBe(redactJsonText(got.text));
      }
    }
    // Both verdicts are common: the generated records hold a sensitive key now and then.
    expect(clean).toBeGreaterThan(routes.length * 5);
    expect(unknown).toBeGreaterThan(routes.length);
  });

  it('answers GET /v1/accounts/{id} with the text the Zod serializer writes for it', async () => {
    const { api } = await sandboxBusiness(app, 'Serializer');
    const metadata = { b: 1, a: [true, null], '2': 'x', text: 'quote " and \\ é 😀' };
    const created = await api.post('/v1/accounts', { currency: 'NGN', label: 'Main "quoted" \\ label', metadata });
    expect(created.status).toBe(200);
    const read = await api.get(`/v1/accounts/${created.body.data.id}`);
    expect(read.status).toBe(200);
    const route = compiled.find((r) => r.method === 'GET' && r.url === '/v1/accounts/:account_id' && r.status === '200')!;
    const { zod } = bothOf(route.schema as z.ZodType);
    expect(read.text).toBe(zod(JSON.parse(read.text)));
  });
});

/** Every key of a parsed JSON value, at any depth, that redaction hides. */
function sensitiveKeysOf(value: unknown): string[] {
  if (typeof value !== 'object' || value === null) return [];
  if (Array.isArray(value)) return value.flatMap(sensitiveKeysOf);
  return Object.entries(value).flatMap(([k, v]) => [...(isSensitiveField(k) ? [k] : []), ...sensitiveKeysOf(v)]);
}

describe("the answer writer's word on keys (the request log's scan)", () => {
  const write = answerWriter(
    z.object({
      data: z.object({ id: z.string(), metadata: z.record(z.string(), z.unknown()), tags: z.array(z.string()) }),
      error: z.null(),
    }),
  );
  const answer = (metadata: Record<string, unknown>) => write({ data: { id: 'a', metadata, tags: ['x'] }, error: null });

  it('vouches for an answer whose keys are all the schema names and none of its records holds a sensitive one', () => {
    const text = answer({ note: 'spin the panel', count: 2, flag: true, none: null });
    expect(answerKeysKnownClean(text)).toBe(true);
  });

  it('does not vouch for a record with a sensitive key, in any spelling', () => {
    for (const key of ['pin', 'cardPin', 'Card-Number', 'api_key', 'access_token'])
      expect(answerKeysKnownClean(answer({ [key]: '5309' })), key).toBe(false);
  });

  it('does not vouch for keys it does not write itself: an object or array of unknown values, a node Zod writes', () => {
    expect(answerKeysKnownClean(answer({ nested: { x: 1 } }))).toBe(false);
    expect(answerKeysKnownClean(answer({ list: [{ x: 1 }] }))).toBe(false);
    const viaZod = answerWriter(z.object({ data: z.union([z.object({ a: z.string() }), z.string()]), error: z.null() }));
    expect(answerKeysKnownClean(viaZod({ data: { a: 'x' }, error: null }))).toBe(false);
  });

  it('does not vouch for a schema that names a sensitive key, present or not', () => {
    const card = answerWriter(z.object({ data: z.object({ id: z.string(), card_pin: z.string().optional() }), error: z.null() }));
    expect(answerKeysKnownClean(card({ data: { id: 'c' }, error: null }))).toBe(false);
  });

  it('knows only the last answer it wrote, by its text', () => {
    const first = answer({ note: 'one' });
    const second = answer({ note: 'two' });
    expect(answerKeysKnownClean(second)).toBe(true);
    expect(answerKeysKnownClean(first)).toBe(false);
    expect(answerKeysKnownClean(`${second} `)).toBe(false);
    answer({ pin: '1' });
    expect(answerKeysKnownClean(answer({ pin: '1' }))).toBe(false);
  });
});

describe('response serializer edge cases', () => {
  const Envelope = z.object({
    data: z.object({
      id: z.string(),
      amount: z.number(),
      flag: z.boolean(),
      gone: z.string().optional(),
      maybe: z.string().nullable(),
      any: z.unknown(),
      tags: z.array(z.string().nullable()),
      metadata: z.record(z.string(), z.unknown()),
      kind: z.enum(['a', 'b']),
      email: z.email(),
      nested: z.object({ x: z.string() }).optional(),
      either: z.union([z.string(), z.number()]),
      withDefault: z.string().default('d'),
    }),
    error: z.null(),
  });
  const { fast, zod } = bothOf(Envelope);
  const base = {
    id: 'i',
    amount: 1.5,
    flag: false,
    maybe: null,
    any: { when: new Date(0), list: [undefined, () => 1] },
    tags: ['a', null],
    metadata: { z: 1, a: undefined, 5: 'five' },
    kind: 'b',
    email: 'a@b.co',
    either: 3,
    withDefault: 'w',
  };
  const cases: [string, unknown][] = [
    ['a valid answer', { data: base, error: null }],
    ['extra keys and reordered keys', { error: null, extra: 1, data: { ...base, zzz: 1, id: 'last' } }],
    ['an optional member present as undefined', { data: { ...base, gone: undefined, nested: { x: 'y', drop: 1 } }, error: null }],
    ['a required member absent', { data: { ...base, id: undefined }, error: null }],
    ['unknown absent', { data: Object.fromEntries(Object.entries(base).filter(([k]) => k !== 'any')), error: null }],
    ['unknown present as undefined', { data: { ...base, any: undefined }, error: null }],
    ['NaN', { data: { ...base, amount: NaN }, error: null }],
    ['a Date for a string', { data: { ...base, id: new Date(0) }, error: null }],
    ['a bigint in unknown', { data: { ...base, any: 1n }, error: null }],
    ['an invalid email (a check)', { data: { ...base, email: 'nope' }, error: null }],
    ['a wrong enum value', { data: { ...base, kind: 'c' }, error: null }],
    ['an array for the object', { data: [base], error: null }],
    ['a class instance as the record', { data: { ...base, metadata: new (class Meta {})() }, error: null }],
    ['__proto__ in the record', { data: { ...base, metadata: JSON.parse('{"__proto__": {"x": 1}, "k": 2}') }, error: null }],
    ['a symbol key in the record', { data: { ...base, metadata: { [Symbol('s')]: 1 } }, error: null }],
    ['error not null', { data: base, error: 'x' }],
  ];
  it.each(cases)('%s', (_name, data) => {
    expect(outcome(fast, data)).toEqual(outcome(zod, data));
  });
});
