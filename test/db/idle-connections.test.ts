import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgres, poolKeepOpen, type DatabaseHandle } from '../../src/db/client.js';
import { pollUntil } from '../../src/lib/poll.js';

describe('poolKeepOpen', () => {
  it('keeps the batch lanes’ connections, base and spare, and one more, within the pool', () => {
    expect(poolKeepOpen({ DB_POOL_SIZE: 20, TRANSFER_BATCH_LANES: 1, TRANSFER_BATCH_SPARE_LANES: 3 })).toBe(5);
    expect(poolKeepOpen({ DB_POOL_SIZE: 20, TRANSFER_BATCH_LANES: 2, TRANSFER_BATCH_SPARE_LANES: 0 })).toBe(3);
    expect(poolKeepOpen({ DB_POOL_SIZE: 4, TRANSFER_BATCH_LANES: 1, TRANSFER_BATCH_SPARE_LANES: 3 })).toBe(4);
  });
});

const url = process.env.DATABASE_URL;

describe.skipIf(!url)('idle connections on PostgreSQL', () => {
  let handle: DatabaseHandle | undefined;
  afterEach(async () => {
    await handle?.close();
    handle = undefined;
  });

  /** `n` transactions at once, each holding its connection a moment: the backends' process ids. */
  const busy = async (db: DatabaseHandle['db'], n: number) =>
    Promise.all(
      Array.from({ length: n }, () =>
        db.transaction().execute(async (trx) => {
          const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
          await sql`select pg_sleep(0.05)`.execute(trx);
          return rows[0]!.pid;
        }),
      ),
    );

  it('keeps `keepOpen` connections open however long they idle, and reuses them, closing only the rest', async () => {
    handle = openPostgres(url!, 6, undefined, true, { keepOpen: 3, idleMs: 50 });
    const first = new Set(await busy(handle.db, 5));
    expect(first.size).toBe(5);
    expect(handle.poolStats!().total).toBe(5);
    // The two above keepOpen close after idleMs; the three kept outlive that many times over.
    expect(await pollUntil(() => handle!.poolStats!().total === 3, 2000)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(handle.poolStats!().total).toBe(3);
    // A burst after the idle spell finds them: no new backend.
    const again = await busy(handle.db, 3);
    expect(again.every((pid) => first.has(pid))).toBe(true);
    expect(handle.poolStats!().total).toBe(3);
  });

  it('closes every idle connection by default', async () => {
    handle = openPostgres(url!, 6, undefined, true, { keepOpen: 0, idleMs: 50 });
    await busy(handle.db, 3);
    expect(await pollUntil(() => handle!.poolStats!().total === 0, 2000)).toBe(true);
  });
});
