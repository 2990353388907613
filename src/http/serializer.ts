import type { FastifySerializerCompiler } from 'fastify';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { isSensitiveField } from '../lib/redact.js';

/**
 * Response serialization, compiled once per route from its Zod response schema.
 *
 * fastify-type-provider-zod answers a response by encoding it with Zod (a checked copy of the
 * whole tree, in the schema's key order, unknown keys dropped) and then `JSON.stringify` of the
 * copy: two passes and a copy per answer, a visible share of a read's CPU. The writer here does
 * both in one pass without the copy: for each schema node it checks the value as Zod would and
 * writes its JSON text directly, in the schema's key order. It is only a fast path: the first
 * value that is not exactly what its schema accepts (or anything that throws) hands the whole
 * answer to the Zod serializer, which answers it (or fails) exactly as before. Nodes this file
 * does not know (unions, transforms, defaults, checks, formats, ...) are encoded by Zod and
 * stringified on their own, which gives the same text as the whole tree's pass would.
 */

/** A node's JSON text, or undefined where JSON.stringify leaves it out (an object member) or writes null (an array element). */
type Write = (value: unknown) => string | undefined;

/**
 * Set while an answer is written when it may hold a key the request log redacts (a sensitive key
 * of the schema or of a record, or keys this file does not see: a nested unknown value, a node
 * Zod writes). An answer written without it is known to hold none, and the log skips the scan of
 * its text for keys (`answerKeysKnownClean`); values are still checked there.
 */
let keysNeedScan = false;

/** The last answer written here, when it is known to hold no sensitive key; null otherwise. */
let lastCleanAnswer: string | null = null;

/**
 * Whether `text` is an answer this file wrote and knows to hold no key the request log redacts.
 * Compared by value: an answer written since (or text from elsewhere) is simply not known.
 */
export function answerKeysKnownClean(text: string): boolean {
  return lastCleanAnswer === text;
}

/** Thrown by a writer when a value is not what its schema accepts: the Zod serializer takes over. */
class Mismatch extends Error {}
const MISMATCH = new Mismatch('response value does not match its schema');

type Schema = z.core.$ZodType;

/** Neither checks, refinements, a string or number format nor coercion: the type alone decides. */
function isPlain(schema: Schema): boolean {
  const def = schema._zod.def as { checks?: unknown[]; format?: unknown; coerce?: unknown };
  return !def.checks?.length && def.format === undefined && !def.coerce && !schema._zod.traits.has('$ZodCheck');
}

/**
 * The characters JSON.stringify writes as an escape: the quote, the backslash, controls, and surrogates (a lone
 * one is escaped; a string without any is written as it is, whatever else it holds).
 */
// eslint-disable-next-line no-control-regex -- the controls are among what JSON.stringify escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** JSON.stringify of a string: a string with nothing to escape (nearly every one) between quotes, without the call. */
export const quote = (value: string) => (NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`);

/** Zod's encoding of `schema` alone, then its JSON text: the fallback for a node kind not written here. */
function viaZod(schema: Schema): Write {
  return (value) => {
    keysNeedScan = true;
    const result = z.core.safeEncode(schema, value);
    if (!result.success) throw MISMATCH;
    return JSON.stringify(result.data);
  };
}

function scalarWriter(schema: Schema): Write | null {
  const def = schema._zod.def;
  switch (def.type) {
    case 'string':
      return (v) => {
        if (typeof v !== 'string') throw MISMATCH;
        return quote(v);
      };
    case 'number':
      return (v) => {
        if (typeof v !== 'number' || !Number.isFinite(v)) throw MISMATCH;
        return String(v);
      };
    case 'boolean':
      return (v) => {
        if (typeof v !== 'boolean') throw MISMATCH;
        return v ? 'true' : 'false';
      };
    case 'null':
      return (v) => {
        if (v !== null) throw MISMATCH;
        return 'null';
      };
    case 'enum':
    case 'literal': {
      const values = schema._zod.values!;
      return (v) => {
        if (!values.has(v as never)) throw MISMATCH;
        return JSON.stringify(v);
      };
    }
    case 'unknown':
    case 'any':
      return (v) => {
        if (typeof v === 'object' && v !== null) keysNeedScan = true;
        return JSON.stringify(v);
      };
    default:
      return null;
  }
}

interface Member {
  key: string;
  /** `"key":` */
  prefix: string;
  /** Absent or undefined: left out. Otherwise the key must be there (Zod's "nonoptional"). */
  optional: boolean;
  write: Write;
}

/** A member of an object is written here only when absence means what JSON.stringify makes of it. */
function memberOf(key: string, schema: Schema): Member | null {
  const { optin, optout } = schema._zod;
  const optional = optin === 'optional' && optout === 'optional';
  if (!optional && (optin !== undefined || optout !== undefined)) return null;
  return { key, prefix: `${quote(key)}:`, optional, write: writerOf(schema) };
}

/** z.object (unknown keys dropped): the shape's keys in the shape's order. */
function objectWriter(schema: Schema): Write | null {
  const def = schema._zod.def as unknown as { catchall?: Schema; shape: Record<string, Schema> };
  if (def.catchall !== undefined || Object.getOwnPropertySymbols(def.shape).length > 0) return null;
  const members: Member[] = [];
  for (const key of Object.keys(def.shape)) {
    if (key === '__proto__') return null;
    const member = memberOf(key, def.shape[key]!);
    if (!member) return null;
    members.push(member);
  }
  const sensitive = members.some((m) => isSensitiveField(m.key));
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw MISMATCH;
    if (sensitive) keysNeedScan = true;
    const input = v as Record<string, unknown>;
    let out = '';
    for (const m of members) {
      const value = input[m.key];
      if (value === undefined) {
        if (!m.optional && !(m.key in input)) throw MISMATCH;
        if (m.optional) continue;
      }
      const text = m.write(value);
      if (text !== undefined) out += out === '' ? m.prefix + text : `,${m.prefix}${text}`;
    }
    return `{${out}}`;
  };
}

function arrayWriter(schema: Schema): Write {
  const element = writerOf((schema._zod.def as unknown as { element: Schema }).element);
  return (v) => {
    if (!Array.isArray(v)) throw MISMATCH;
    let out = '';
    for (let i = 0; i < v.length; i++) out += (i === 0 ? '' : ',') + (element(v[i]) ?? 'null');
    return `[${out}]`;
  };
}

/** z.record(z.string(), …): the object's own enumerable string keys in their order (as Zod copies them). */
function recordWriter(schema: Schema): Write | null {
  const def = schema._zod.def as unknown as { keyType: Schema; valueType: Schema; mode?: string };
  const keyType = def.keyType;
  if (keyType._zod.def.type !== 'string' || !isPlain(keyType) || (def.mode !== undefined && def.mode !== 'strict')) return null;
  const value = writerOf(def.valueType);
  return (v) => {
    if (!z.core.util.isPlainObject(v)) throw MISMATCH;
    let out = '';
    for (const key of Reflect.ownKeys(v)) {
      if (typeof key !== 'string') throw MISMATCH;
      if (key === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, key)) continue;
      if (isSensitiveField(key)) keysNeedScan = true;
      const text = value(v[key]);
      if (text !== undefined) out += `${out === '' ? '' : ','}${quote(key)}:${text}`;
    }
    return `{${out}}`;
  };
}

function wrapperWriter(schema: Schema): Write | null {
  const def = schema._zod.def as unknown as { type: string; innerType: Schema };
  if (def.type === 'nullable') {
    const inner = writerOf(def.innerType);
    return (v) => (v === null ? 'null' : inner(v));
  }
  if (def.type === 'optional' && def.innerType._zod.optin !== 'defaulted') {
    const inner = writerOf(def.innerType);
    return (v) => (v === undefined ? undefined : inner(v));
  }
  return null;
}

/** The writer of one schema node: written here when its kind is known and plain, else Zod's. */
export function writerOf(schema: Schema): Write {
  if (!isPlain(schema)) return viaZod(schema);
  const kind = schema._zod.def.type;
  const written =
    kind === 'object'
      ? objectWriter(schema)
      : kind === 'array'
        ? arrayWriter(schema)
        : kind === 'record'
          ? recordWriter(schema)
          : kind === 'nullable' || kind === 'optional'
            ? wrapperWriter(schema)
            : scalarWriter(schema);
  return written ?? viaZod(schema);
}

/**
 * Fastify's serializer compiler (app.ts): a route's answers are written by its schema's writer,
 * and any answer the writer refuses goes to fastify-type-provider-zod's serializer, so a wrong
 * answer fails with the same error as before.
 */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType> = (route) => {
  const viaZodSerializer = zodSerializerCompiler(route as never) as (data: unknown) => string;
  const schema = route.schema as unknown;
  if (!(schema instanceof z.core.$ZodType)) return viaZodSerializer;
  return answerWriter(schema, viaZodSerializer);
};

/**
 * What a route whose response schema is `schema` writes for `data`: the same text its answers
 * are sent as, for an answer written again outside the route (a logged request's, from its event).
 */
export function answerWriter(
  schema: Schema,
  viaZodSerializer = zodSerializerCompiler({ schema } as never) as (data: unknown) => string,
): (data: unknown) => string {
  const write = writerOf(schema);
  return (data: unknown) => {
    keysNeedScan = false;
    try {
      const text = write(data);
      if (text !== undefined) {
        lastCleanAnswer = keysNeedScan ? null : text;
        return text;
      }
    } catch {
      // not what the schema accepts (or a value JSON.stringify refuses): Zod's serializer decides
    }
    lastCleanAnswer = null;
    return viaZodSerializer(data);
  };
}
