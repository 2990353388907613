import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, PreparedNames, type DatabaseHandle } from '../../src/db/client.js';
import { isRetryableConflict, retryOnConflict } from '../../src/db/retry.js';
import { clientFor, cloneTemplateDatabase, johnDoe, startTestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';
import { gtbPayee, nubans } from '../payout-fixtures.js';

describe('PreparedNames', () => {
  it('names a text the second time it is seen, and deallocates the least recently used beyond its size', () => {
    const deallocated: string[] = [];
    const names = new PreparedNames((n) => deallocated.push(n), 2);
    const twice = (text: string) => names.nameOf(text) ?? names.nameOf(text);
    expect(names.nameOf('select once')).toBeUndefined(); // a batch shape that may never come back
    const a = twice('select a');
    const b = twice('select b');
    expect(a).toBeDefined();
    expect(names.nameOf('select a')).toBe(a); // a is now the most recent
    expect(a).not.toBe(b);
    twice('select c');
    expect(deallocated).toEqual([b]);
    // A text seen again after its eviction gets a new name: pg never sees a name reused.
    const b2 = twice('select b');
    expect(b2).not.toBe(b);
    expect(deallocated).toEqual([b, a]);
  });
});

const url = process.env.DATABASE_URL;

describe.skipIf(!url)('named prepared statements on PostgreSQL', () => {
  let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
  const handles: DatabaseHandle[] = [];
  // One connection each, so every statement below runs on the same session.
  const open = (prepared: boolean) => {
    const handle = openPostgres(clone.url, 1, undefined, prepared);
    handles.push(handle);
    return handle.db;
  };
  const read = (db: DatabaseHandle['db']) =>
    db
      .selectFrom('prepared_probe' as never)
      .selectAll()
      .where('id' as never, '=', 1 as never)
      .execute() as Promise<object[]>;
  const preparedHere = async (db: DatabaseHandle['db']) =>
    (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(db)).rows.map((r) => r.statement);

  beforeAll(async () => {
    clone = await cloneTemplateDatabase(url!);
    const setup = openPostgres(clone.url, 1, undefined, false);
    await sql`create table prepared_probe (id int primary key, a text)`.execute(setup.db);
    await sql`insert into prepared_probe values (1, 'x')`.execute(setup.db);
    await setup.close();
  });
  afterAll(async () => {
    for (const h of handles) await h.close();
    await clone?.drop();
  });

  it('prepares a statement with parameters once per connection, and not when switched off', async () => {
    const db = open(true);
    await read(db);
    expect((await preparedHere(db)).filter((s) => s.includes('prepared_probe'))).toEqual([]); // seen once
    await read(db);
    await read(db);
    expect((await preparedHere(db)).filter((s) => s.includes('prepared_probe'))).toHaveLength(1);

    const plain = open(false);
    await read(plain);
    await read(plain);
    expect((await preparedHere(plain)).filter((s) => s.includes('prepared_probe'))).toEqual([]);
  });

  it("answers a named statement's later calls with rows equal to an unnamed one's, column for column", async () => {
    // The later calls reuse the parsers and empty row of the first named answer (namedQuery).
    const typed = (db: DatabaseHandle['db'], id: number) =>
      sql<Record<string, unknown>>`select ${id}::int as id, 9007199254740993::int8 as big, '12.50'::numeric as amount,
        '2026-12-07 01:02:03.456789+00'::timestamptz as at, '{"k":[1,"v"]}'::jsonb as doc, null::text as gone,
        'first' as dup, 'second' as dup, 'p' as "__proto__"`
        .execute(db)
        .then((r) => r.rows);
    const db = open(true);
    const plain = open(false);
    for (const id of [1, 2, 3, 4]) {
      const [rows, expected] = [await typed(db, id), await typed(plain, id)];
      expect(rows).toEqual(expected);
      expect(Object.keys(rows[0]!)).toEqual(Object.keys(expected[0]!));
      expect(Object.getPrototypeOf(rows[0]!)).toBe(Object.getPrototypeOf(expected[0]!));
      expect(rows[0]!.big).toBe(9007199254740993n);
      expect(rows[0]!.at).toBeInstanceOf(Date);
    }
    expect((await preparedHere(db)).filter((s) => s.includes('9007199254740993'))).toHaveLength(1);
  });

  it('a table changed under a cached plan fails once as retryable, and the retry succeeds', async () => {
    const db = open(true);
    await read(db);
    expect(await read(db)).toEqual([{ id: 1, a: 'x' }]);
    const other = open(false);
    await sql`alter table prepared_probe add column b text default 'y'`.execute(other);

    const err = await read(db).catch((e: unknown) => e);
    expect(isRetryableConflict(err)).toBe(true);
    expect(await retryOnConflict(() => read(db))).toEqual([{ id: 1, a: 'x', b: 'y' }]);
  });
});

describe.skipIf(!url)('generic plans of prepared statements on PostgreSQL', () => {
  // PostgreSQL switches a prepared statement to a generic plan (parameters unknown) after five
  // executions. An ON CONFLICT naming a partial unique index must still find that index, so its
  // predicate has to be literal SQL: a parameter cannot prove the index's predicate.
  it('creates a dozen payees for one customer, one after another, each accepted', async () => {
    const t = await startTestApp();
    try {
      const api = clientFor(t, (await t.tenant()).sandbox.secret_key);
      const customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
      await approveKyc(api, customerId);
      const nuban = nubans(200000);
      for (let i = 0; i < 12; i++) {
        const res = await api.post('/v1/external-accounts', gtbPayee(customerId, nuban()));
        expect(res.status, res.text).toBe(202);
      }
    } finally {
      await t.close();
    }
  });
});
