import { describe, expect, it } from 'vitest';
import { startFloorServer } from '../../bench/floor.js';
import { havePgbench, withPgbenchDatabase } from '../../bench/pgbench.js';
import { admin } from '../../bench/server.js';
import { steadyTransfers } from '../../bench/steady.js';

const pgUrl = process.env.DATABASE_URL;

/**
 * The tail references' floor (bench/floor-server.ts): pgbench's TPC-B transaction behind a bare
 * HTTP server. It must run the whole transaction for every request the load counts as answered,
 * or the floor's latency would be that of less work than pgbench's.
 */
describe.skipIf(!pgUrl || !havePgbench())("the bench's floor server", () => {
  it("answers each request with pgbench's whole transaction, and a body it cannot parse with a 400", async () => {
    await withPgbenchDatabase(pgUrl!, `fsapi_floor_${process.pid}`, 1, async (url) => {
      const floor = await startFloorServer(url, 1);
      try {
        const bad = await fetch(`${floor.base}/v1/transfers`, { method: 'POST', body: '{"amount":' });
        expect(bad.status).toBe(400);
        const good = await fetch(`${floor.base}/v1/transfers`, { method: 'POST', body: '{"amount":"1.00"}' });
        expect(good.status).toBe(200);
        expect(((await good.json()) as { data: { amount: string } }).data.amount).toBe('1.00');
        // One second at 50/s, offered as the bench offers it (bench/tails.ts).
        const run = await steadyTransfers({ base: floor.base, key: 'floor', seconds: 1, rate: 50 }, () => ['a', 'b']);
        expect(run).toMatchObject({ ok: 50, failed: 0 });
      } finally {
        floor.stop();
      }
      const { rows } = await admin(url, (c) =>
        c.query<{ n: string; history: string; accounts: string; tellers: string; branches: string }>(`
          select (select count(*) from pgbench_history) as n,
            (select coalesce(sum(delta), 0) from pgbench_history) as history,
            (select sum(abalance) from pgbench_accounts) as accounts,
            (select sum(tbalance) from pgbench_tellers) as tellers,
            (select sum(bbalance) from pgbench_branches) as branches`),
      );
      const sums = rows[0]!;
      expect(Number(sums.n)).toBe(51);
      // Every update of every transaction applied: the three balances each sum to the history's deltas.
      expect([sums.accounts, sums.tellers, sums.branches]).toEqual([sums.history, sums.history, sums.history]);
    });
  }, 60_000);
});
