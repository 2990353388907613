import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arrayParameter, valuesOf, valuesParameters, valuesShape } from '../../src/db/values.js';
import { startTestApp, type TestApp } from '../harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** Texts an array literal must carry exactly: quotes, backslashes, separators, braces, the word NULL, blanks. */
const TEXTS = [
  'plain',
  '',
  'NULL',
  'null',
  'a,b',
  '{x}',
  ' spaced ',
  'quote " inside',
  'back\\slash',
  '\\"',
  'ünïcødé ✓',
  '"',
  '\\',
  'line\nbreak',
  'tab\tand \u0001',
  '{"a":"b\\"c"}',
];

describe('rows as a relation (valuesOf)', () => {
  it.each([3, TEXTS.length])('gives back every value as sent, %i rows (a VALUES list up to 8, else arrays)', async (count) => {
    const rows = TEXTS.slice(0, count).map((text, i) => [
      i,
      text,
      i % 3 === 0 ? null : BigInt(i) * 10_000_000_000n - 1n,
      JSON.stringify({ text, n: i, nested: { q: '"', b: '\\' } }),
      new Date(Date.UTC(2026, 10, 27, 12, 0, i)),
      `0190a000-0000-7000-8000-${String(i).padStart(12, '0')}`,
    ]);
    const relation = valuesOf('v', { i: 'int', text: 'text', amount: 'bigint', doc: 'jsonb', at: 'timestamptz', id: 'uuid' }, rows);
    const { rows: back } = await sql<{ i: number; text: string; amount: string | null; doc: unknown; at: Date; id: string }>`
      select i, text, amount::text as amount, doc, at, id::text as id from ${relation} order by i`.execute(t.db);
    expect(back.map((r) => [r.i, r.text, r.amount, r.doc, r.at.toISOString(), r.id])).toEqual(
      rows.map(([i, text, amount, doc, at, id]) => [
        i,
        text,
        amount === null ? null : String(amount),
        JSON.parse(doc as string),
        (at as Date).toISOString(),
        id,
      ]),
    );
  });
});

describe('a column as one array parameter (arrayParameter)', () => {
  it('writes strings, integers and nulls as array text, and leaves pg anything JSON escapes otherwise or it cannot write', () => {
    expect(arrayParameter(['a', null, 'quote " and \\', 'NULL'])).toBe('{"a",null,"quote \\" and \\\\","NULL"}');
    expect(arrayParameter([1, null, -20_000_000_000n, 0])).toBe('{1,NULL,-20000000000,0}');
    expect(arrayParameter([])).toBe('{}');
    for (const odd of ['line\nbreak', 'lone \ud800', 'bell \u0007']) expect(arrayParameter(['plain', odd])).toEqual(['plain', odd]);
    const date = new Date();
    for (const other of [[1.5], [true, false], [date], ['a', 1], [{ a: 1 }], [Number.MAX_SAFE_INTEGER + 2]])
      expect(arrayParameter(other)).toEqual(other);
  });
});

describe('valuesOf compiled once per shape (valuesShape, valuesParameters)', () => {
  const columns = { id: 'uuid', n: 'bigint', s: 'text' };
  const rowsOf = (count: number) =>
    Array.from({ length: count }, (_, i) => [`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, `${i}`, `s,"${i}"`]);

  it("describes the parameters Kysely compiles from valuesOf, in order, as a VALUES list and as unnest's arrays", () => {
    for (const count of [1, 2, 8, 9, 40]) {
      const rows = rowsOf(count);
      const compiled = sql`select * from ${valuesOf('v', columns, rows)}`.compile(t.db);
      expect(valuesParameters(rows)).toEqual(compiled.parameters);
    }
  });

  it('names one shape per row count up to eight, and one for any count beyond', () => {
    expect([1, 2, 8, 9, 40].map((n) => valuesShape(rowsOf(n)))).toEqual(['1', '2', '8', 'unnest', 'unnest']);
    const text = (n: number) => sql`select * from ${valuesOf('v', columns, rowsOf(n))}`.compile(t.db).sql;
    expect(text(9)).toBe(text(40));
    expect(text(2)).not.toBe(text(3));
  });
});
