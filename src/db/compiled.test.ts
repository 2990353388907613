import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPGlite, type DatabaseHandle } from './client.js';
import { compiledOnce } from './compiled.js';

describe('compiledOnce', () => {
  let handle: DatabaseHandle;
  beforeAll(async () => {
    handle = await openPGlite();
  });
  afterAll(() => handle?.close());

  it('builds the statement once and runs each call with its own parameters', async () => {
    let builds = 0;
    const joined = compiledOnce((db, a: string, b: string[]) => {
      builds++;
      return db.selectNoFrom(sql<string>`${a}::text || array_to_string(${b}::text[], ',')`.as('v'));
    });
    expect((await joined.execute(handle.db, 'x:', ['1', '2'])).rows).toEqual([{ v: 'x:1,2' }]);
    expect((await joined.execute(handle.db, 'y:', ['3'])).rows).toEqual([{ v: 'y:3' }]);
    expect(builds).toBe(1);
  });

  it('refuses a statement that holds a value the caller did not pass as a parameter', async () => {
    const fixed = compiledOnce((db, a: string) => db.selectNoFrom(sql<string>`${a}::text || ${'constant'}::text`.as('v')));
    await expect(fixed.execute(handle.db, 'x')).rejects.toThrow(/not the ones given/);
  });
});
