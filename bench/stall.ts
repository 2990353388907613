/**
 * One stalled batch and the transfers behind it: a steady load of transfers among 100 accounts
 * while, every second, a transaction of this script holds one account's balance row (one at
 * random) for a while, as a commit held up by the disk holds its batch. With one lane and no
 * spare, every transfer that arrives meanwhile waits for the stalled batch; with spare lanes (the
 * default) only those of the held account do, and those a batch left out behind them, in arrival
 * order on their accounts (db/batcher.ts `touches`).
 *
 * The servers share one database and its accounts and take turns, a slice each per round, so that
 * the machine's moments fall on all of them alike (run one after the other, the same build's p50
 * moved by 3× between runs). Its p99 sits near the transfers of the held account itself (2 in 100
 * name it), which wait whatever the lanes do, so it also prints the share of transfers that took
 * over 100 ms:
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/stall.ts [rate] [seconds] [hold ms] [rounds] [name=path[:ENV=value] ...]
 *
 * Each path must hold a build (dist/); without any, this build with and without spare lanes.
 */
import { balanceLockOf } from '../src/ledger/repo.js';
import { quantileMs } from './load.js';
import { anyOf, fundedAccounts, randomPairs, startBuild, withBenchDatabase, type Server } from './server.js';
import { steadyResult, steadyTransfers, type SteadySamples } from './steady.js';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const args = process.argv.slice(2);
const [rate = 100, seconds = 10, holdMs = 200, rounds = 1] = args.filter((a) => !a.includes('=')).map(Number);
const specs = args.filter((a) => a.includes('='));
const variants = specs.length > 0 ? specs : ['no spare lanes=.:TRANSFER_BATCH_SPARE_LANES=0', 'spare lanes=.:TRANSFER_BATCH_SPARE_LANES=3'];
const name = `fsapi_bench_stall_${process.pid}`;

await withBenchDatabase(adminUrl, name, async ({ url, handle, key }) => {
  const servers: { name: string; server: Server; runs: SteadySamples[] }[] = [];
  try {
    for (const spec of variants) servers.push({ ...(await startBuild(spec, url, 8)), runs: [] });
    const ids = await fundedAccounts(servers[0]!.server.base, key, 100);
    const pick = randomPairs(ids);
    for (const s of servers) await steadyTransfers({ base: s.server.base, key, seconds: 2, rate }, pick);
    for (let round = 0; round < rounds; round++) {
      for (const s of servers) {
        let holding = true;
        const holder = (async () => {
          while (holding) {
            await new Promise((r) => setTimeout(r, 1000 - holdMs));
            await handle.db.transaction().execute(async (trx) => {
              await balanceLockOf(anyOf(ids)).execute(trx);
              await new Promise((r) => setTimeout(r, holdMs));
            });
          }
        })();
        const run = await steadyTransfers({ base: s.server.base, key, seconds, rate }, pick);
        holding = false;
        await holder;
        s.runs.push(run.samples);
        console.log(`round ${round} ${s.name}: p50 ${run.p50} ms, p99 ${run.p99} ms (load generator p99 ${run.sendLagP99} ms late)`);
      }
    }
    for (const s of servers) {
      const pooled = steadyResult(s.runs);
      const sorted = pooled.samples.latencies;
      const slow = sorted.filter((ms) => ms > 100).length;
      console.log(
        `${s.name}: ${pooled.ok} transfers at ${rate}/s, one of 100 accounts held ${holdMs} ms a second: p50 ${pooled.p50} ms, ` +
          `p90 ${quantileMs(sorted, 0.9)} ms, p99 ${pooled.p99} ms, over 100 ms ${((100 * slow) / pooled.ok).toFixed(1)} %`,
      );
    }
  } finally {
    for (const s of servers) await s.server.stop();
  }
});
