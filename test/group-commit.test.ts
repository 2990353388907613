import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../src/db/client.js';
import { GroupCommit } from '../src/db/group-commit.js';
import { openTestDatabase } from './harness.js';

let handle: DatabaseHandle;
beforeAll(async () => {
  handle = await openTestDatabase();
  await sql`create table gc_probe (id int primary key, note text not null)`.execute(handle.db);
});
afterAll(async () => handle?.close());

describe('group commit', () => {
  it('commits each unit or none of it, sharing one transaction', async () => {
    const locked: string[][] = [];
    const gc = new GroupCommit(handle.db, async (_trx, keys) => void locked.push(keys), { maxBatch: 8, lanes: 1 });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        gc.run(async (trx) => {
          await sql`insert into gc_probe (id, note) values (${i}, 'first')`.execute(trx);
          // Every third unit fails after writing: only its own row must vanish.
          if (i % 3 === 0) await sql`insert into gc_probe (id, note) values (${i}, 'duplicate')`.execute(trx);
          if (i % 3 === 1) throw new Error(`unit ${i} refused`);
          return i;
        }, [`k${i % 4}`]),
      ),
    );
    const ok = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(ok).toEqual(Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 3 === 2));
    const rows = await sql<{ id: number }>`select id from gc_probe order by id`.execute(handle.db);
    expect(rows.rows.map((r) => r.id)).toEqual(ok);
    // Batches formed (20 units, at most 8 per batch) and locked their keys sorted and unique.
    expect(locked.length).toBeGreaterThanOrEqual(3);
    for (const keys of locked) expect(keys).toEqual([...new Set(keys)].sort());
  });
});
