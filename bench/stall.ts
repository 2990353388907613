/**
 * One stalled batch and the transfers behind it: a steady load of transfers among 100 accounts
 * while, every second, a transaction of this script holds one account's balance row for a while,
 * as a commit held up by the disk holds its batch. With one lane and no spare, every transfer
 * that arrives meanwhile waits for the stalled batch; with spare lanes (the default) only those
 * of the held account do (and those a batch left out behind them, in arrival order on their
 * accounts: db/batcher.ts `touches`). Runs the server with and without spare lanes, one after
 * the other. Its p99 sits near the transfers of the held account itself (2 in 100 name it), so it
 * also prints the share of transfers that took over 100 ms:
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/stall.ts [rate] [seconds] [hold ms]
 */
import { balanceLockOf } from '../src/ledger/repo.js';
import { fundedAccounts, randomPairs, startServer, withBenchDatabase } from './server.js';
import { steadyTransfers } from './steady.js';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const [rate = 100, seconds = 10, holdMs = 200] = process.argv.slice(2).map(Number);
const name = `fsapi_bench_stall_${process.pid}`;

await withBenchDatabase(adminUrl, name, async ({ url, handle, key }) => {
  for (const spare of ['0', '3']) {
    const server = await startServer({ dbUrl: url, poolSize: 8, env: { TRANSFER_BATCH_SPARE_LANES: spare } });
    try {
      const ids = await fundedAccounts(server.base, key, 100);
      const pick = randomPairs(ids);
      await steadyTransfers({ base: server.base, key, seconds: 2, rate }, pick);
      let holding = true;
      const holder = (async () => {
        for (let i = 0; holding; i++) {
          await new Promise((r) => setTimeout(r, 1000 - holdMs));
          await handle.db.transaction().execute(async (trx) => {
            await balanceLockOf(ids[i % ids.length]!).execute(trx);
            await new Promise((r) => setTimeout(r, holdMs));
          });
        }
      })();
      const run = await steadyTransfers({ base: server.base, key, seconds, rate }, pick);
      holding = false;
      await holder;
      const slow = run.samples.latencies.filter((ms) => ms > 100).length;
      console.log(
        `spare lanes ${spare}: ${run.ok} transfers at ${rate}/s, one of 100 accounts held ${holdMs} ms a second: p50 ${run.p50} ms, p99 ${run.p99} ms, ` +
          `over 100 ms ${((100 * slow) / run.ok).toFixed(1)} % (load generator p99 ${run.sendLagP99} ms late)`,
      );
    } finally {
      await server.stop();
    }
  }
});
