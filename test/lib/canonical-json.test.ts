import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/lib/crypto.js';
import { canonicalJson } from '../../src/lib/json.js';

/** canonicalJson as it was first written: every stored Idempotency-Key fingerprint is a hash of this text. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
}

describe('the fingerprint of a request (Idempotency-Key)', () => {
  it('canonicalJson gives the text it always gave, for any JSON body (with undefined members, as parsed bodies may hold)', () => {
    const json = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.constant(null),
        fc.boolean(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.string({ unit: 'binary' }),
        fc.constant(undefined),
        fc.array(tie('value'), { maxLength: 5 }),
        fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }), tie('value'), { maxKeys: 6 }),
      ),
    })).value;
    fc.assert(
      fc.property(json, (value) => canonicalJson(value) === reference(value)),
      { numRuns: 2000 },
    );
    const body = { source: { id: 'a', source_type: 'internal_account' }, destination: { id: 'b' }, amount: '1.00', x: undefined };
    expect(canonicalJson(body)).toBe('{"amount":"1.00","destination":{"id":"b"},"source":{"id":"a","source_type":"internal_account"}}');
  });

  it('sha256Hex is the SHA-256 it always was', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => sha256Hex(text) === createHash('sha256').update(text).digest('hex')));
    const bytes = Buffer.from([0, 1, 2, 255]);
    expect(sha256Hex(bytes)).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});
