import { sql, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Queryable } from '../../src/db/client.js';
import { compiledPerShape, insertPerShape, insertShape } from '../../src/db/compiled.js';
import { valuesOf } from '../../src/db/values.js';
import { WriteSet } from '../../src/db/write-set.js';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
  await sql`create table write_set_probe (id uuid primary key, label text not null, amount bigint not null, doc jsonb not null default '{}')`.execute(
    t.db,
  );
});
afterAll(async () => {
  await sql`drop table if exists write_set_probe`.execute(t.db);
  await t.close();
});

type Probe = { id: string; label: string; amount: bigint };
const insertProbes = compiledPerShape(
  (db: Queryable, rows: Probe[]) => db.insertInto('write_set_probe' as never).values(rows as never),
  insertShape,
);
const probe = (label: string, amount: bigint): Probe => ({ id: newId(), label, amount });

/** The parts of a write statement as Kysely builders and templates (what every part was before it could be compiled once). */
function kyselyParts(db: Queryable, existing: Probe[], rows: Probe[], moreRows: Probe[]) {
  return [
    db.insertInto('write_set_probe' as never).values(rows as never),
    sql`update write_set_probe p set amount = p.amount + d.delta
      from ${valuesOf(
        'd',
        { id: 'uuid', delta: 'bigint' },
        existing.map((r) => [r.id, 1n]),
      )} where p.id = d.id`,
    db.insertInto('write_set_probe' as never).values(moreRows as never),
  ];
}

/** What WriteSet.flush sends, and runs it. */
async function sent(
  db: Queryable,
  parts: ReturnType<typeof kyselyParts> | (ReturnType<typeof kyselyParts>[number] | CompiledQuery<unknown>)[],
) {
  const set = new WriteSet(db);
  parts.forEach((p) => set.add(p));
  const spy = vi.spyOn(db.getExecutor(), 'executeQuery');
  try {
    await set.flush();
    return spy.mock.calls.map(([q]) => q as CompiledQuery<unknown>).map((q) => ({ sql: q.sql, parameters: q.parameters }));
  } finally {
    spy.mockRestore();
  }
}

describe('the write statement (WriteSet)', () => {
  it('joins its parts into the same text and parameters Kysely compiles, compiled-once parts included', async () => {
    await t.db.transaction().execute(async (trx) => {
      const existing = [probe('a "quoted" $1 label', 10n), probe('b', 20n)];
      await trx
        .insertInto('write_set_probe' as never)
        .values(existing as never)
        .execute();
      const rows = [probe('c', 30n), probe('d', 40n)];
      const more = [probe('e', 50n)];
      const parts = kyselyParts(trx, existing, rows, more);
      const expected = sql`with ${sql.join(parts.map((part, i) => sql`${sql.raw(`w${i}`)} as (${part})`))} select 1`.compile(trx);
      // The same parts with the inserts compiled once per shape (a first call compiles, the second only fills in).
      const compiledParts = (r: Probe[], m: Probe[]) => [insertProbes(trx, r), kyselyParts(trx, existing, r, m)[1]!, insertProbes(trx, m)];
      compiledParts([probe('x', 1n), probe('y', 2n)], [probe('z', 3n)]);
      const calls = await sent(trx, compiledParts(rows, more));
      expect(calls).toEqual([{ sql: expected.sql, parameters: [...expected.parameters] }]);
      const stored = await sql<{ label: string; amount: string }>`select label, amount::text from write_set_probe order by amount`.execute(
        trx,
      );
      expect(stored.rows).toEqual([
        { label: 'a "quoted" $1 label', amount: '11' },
        { label: 'b', amount: '21' },
        { label: 'c', amount: '30' },
        { label: 'd', amount: '40' },
        { label: 'e', amount: '50' },
      ]);
      await sql`delete from write_set_probe`.execute(trx);
    });
  });

  it('compiles a part whose text holds a $ of its own with Kysely, as before', async () => {
    await t.db.transaction().execute(async (trx) => {
      const odd = sql`insert into write_set_probe (id, label, amount) values (${newId()}, '$1 not a parameter', ${5n})`;
      insertProbes(trx, [probe('before', 1n)]); // compiled with other values first
      const row = probe('x', 1n);
      const expected = sql`with ${sql.join([sql`w0 as (${odd})`, sql`w1 as (${trx.insertInto('write_set_probe' as never).values([row] as never)})`])} select 1`;
      const calls = await sent(trx, [odd, insertProbes(trx, [row])]);
      expect(calls.map((c) => c.sql)).toEqual([expected.compile(trx).sql]);
      const labels = await sql<{ label: string }>`select label from write_set_probe order by label`.execute(trx);
      expect(labels.rows.map((r) => r.label)).toEqual(['$1 not a parameter', 'x']);
      await sql`delete from write_set_probe`.execute(trx);
    });
  });
});

describe('compiledPerShape', () => {
  it('builds a statement once per shape, and rows Kysely would write otherwise as usual', async () => {
    let builds = 0;
    const insert = compiledPerShape((db: Queryable, rows: Record<string, unknown>[]) => {
      builds++;
      return db.insertInto('write_set_probe' as never).values(rows as never);
    }, insertShape);
    const run = (rows: Record<string, unknown>[]) => t.db.executeQuery(insert(t.db, rows));
    await run([probe('a', 1n), probe('b', 2n)]);
    await run([probe('c', 3n), probe('d', 4n)]);
    expect(builds).toBe(1);
    await run([probe('e', 5n)]); // another row count: another shape
    expect(builds).toBe(2);
    // Different columns, an undefined value (the column's default) or an expression: built as usual, and right.
    await run([probe('f', 6n), { label: 'g', amount: 7n, id: newId() }]);
    await run([{ ...probe('h', 8n), doc: undefined }, probe('i', 9n)]);
    await run([
      { ...probe('j', 10n), doc: sql`'{"k":1}'::jsonb` },
      { ...probe('k', 11n), doc: '{}' },
    ]);
    expect(builds).toBe(5);
    const stored = await sql<{ label: string; doc: unknown }>`select label, doc from write_set_probe order by amount`.execute(t.db);
    expect(stored.rows.map((r) => r.label).join('')).toBe('abcdefghijk');
    expect(stored.rows.find((r) => r.label === 'j')?.doc).toEqual({ k: 1 });
    await sql`delete from write_set_probe`.execute(t.db);
  });

  it('refuses a description whose parameters are not the statement’s', () => {
    const wrong = compiledPerShape(
      (db: Queryable, rows: Probe[]) => db.insertInto('write_set_probe' as never).values(rows as never),
      (rows) => ({ shape: String(rows.length), parameters: rows.map((r) => r.id) }),
    );
    expect(() => wrong(t.db, [probe('a', 1n)])).toThrow(/not the ones described/);
  });

  it('insertPerShape is typed by the table', () => {
    expect(typeof insertPerShape('events')).toBe('function');
  });
});

describe('insertPerShape', () => {
  const insertRows = insertPerShape('write_set_probe' as never) as unknown as (db: Queryable, rows: Probe[]) => CompiledQuery<unknown>;
  const kysely = (db: Queryable, rows: Probe[]) =>
    db
      .insertInto('write_set_probe' as never)
      .values(rows as never)
      .compile();

  it('sends a column whose value is the same in every row once, and stores what Kysely’s statement stores', async () => {
    await t.db.transaction().execute(async (trx) => {
      const at = (ms: number) => new Date(Date.UTC(2026, 11, 2, 16, 0, 0, ms));
      // label the same in every row, amount in two of three, a time equal in value but not the same Date.
      const rows = [
        { ...probe('same', 7n), doc: JSON.stringify({ at: at(5) }) },
        { ...probe('same', 7n), doc: JSON.stringify({ at: at(5) }) },
        { ...probe('same', 8n), doc: JSON.stringify({ at: at(5) }) },
      ];
      const compiled = insertRows(trx, rows);
      expect(kysely(trx, rows).parameters).toHaveLength(12);
      // id per row; label and doc once; amount per row (not the same in all three).
      expect(compiled.parameters).toEqual([rows[0]!.id, 'same', 7n, rows[0]!.doc, rows[1]!.id, 7n, rows[2]!.id, 8n]);
      expect(compiled.sql).toMatch(/values \(\$1, \$2, \$3, \$4\), \(\$5, \$2, \$6, \$4\), \(\$7, \$2, \$8, \$4\)$/);
      // Joined into a write statement with another part, numbered on after it.
      const calls = await sent(trx, [insertProbes(trx, [probe('first', 1n)]), compiled]);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.parameters).toHaveLength(3 + 8);
      expect(calls[0]!.sql).toContain('values ($4, $5, $6, $7), ($8, $5, $9, $7), ($10, $5, $11, $7)');
      const stored = await sql<{ id: string; label: string; amount: string; doc: unknown }>`
        select id, label, amount::text, doc from write_set_probe where label = 'same' order by amount, id`.execute(trx);
      expect(stored.rows).toEqual(
        [...rows]
          .sort((a, b) => Number(a.amount - b.amount) || (a.id < b.id ? -1 : 1))
          .map((r) => ({ id: r.id, label: 'same', amount: String(r.amount), doc: JSON.parse(r.doc) })),
      );
      await sql`delete from write_set_probe`.execute(trx);
    });
  });

  // The fault: Dates were shared when their instants were equal, so rows that each took their own
  // `new Date()` gave one statement text when they fell in one millisecond and another when they
  // did not: a batch of a shape seen before built its statement again, by chance
  // (test/transfers/compiled-statements.test.ts failed now and then).
  it('shares a Date only when every row holds that same Date, so the text does not depend on the clock', async () => {
    const date = (ms: number) => new Date(Date.UTC(2026, 11, 2, 16, 0, 0, ms));
    const withDates = insertPerShape('write_set_probe' as never) as unknown as (db: Queryable, rows: object[]) => CompiledQuery<unknown>;
    const row = (at: Date) => ({ id: newId(), at });
    const sameMs = withDates(t.db, [row(date(1)), row(date(1))]);
    const nextMs = withDates(t.db, [row(date(1)), row(date(2))]);
    expect(sameMs.sql).toBe(nextMs.sql);
    expect(sameMs.parameters).toHaveLength(4);
    const now = date(3);
    expect(withDates(t.db, [row(now), row(now)]).parameters).toHaveLength(3);
    const one = [probe('alone', 1n)];
    expect(insertRows(t.db, one)).toMatchObject({ sql: kysely(t.db, one).sql, parameters: kysely(t.db, one).parameters });
  });
});

describe('the write statement’s placeholders', () => {
  it('leaves a $ inside a quoted string or identifier alone, and joins the part', async () => {
    await t.db.transaction().execute(async (trx) => {
      const odd = sql`insert into write_set_probe (id, label, amount) values (${newId()}, '$2 and ''$1''', ${5n})`;
      const calls = await sent(trx, [insertProbes(trx, [probe('x', 1n)]), odd.compile(trx)]);
      expect(calls[0]!.sql).toContain(`values ($4, '$2 and ''$1''', $5)`);
      const labels = await sql<{ label: string }>`select label from write_set_probe order by label`.execute(trx);
      expect(labels.rows.map((r) => r.label)).toEqual(["$2 and '$1'", 'x']);
      await sql`delete from write_set_probe`.execute(trx);
    });
  });
});
