import { fundedAccounts, randomPairs, startServer, withBenchDatabase } from './server.js';
import { steadyTransfers } from './steady.js';
const adminUrl = process.env.BENCH_DATABASE_URL!;
const rate = Number(process.argv[2] ?? 100);
await withBenchDatabase(adminUrl, `fsapi_bench_prof_${process.pid}`, async ({ url, key }) => {
  const server = await startServer({ dbUrl: url, poolSize: 8, nodeArgs: ['--cpu-prof', '--cpu-prof-dir=/tmp/prof100'] });
  try {
    const ids = await fundedAccounts(server.base, key, 100);
    const pick = randomPairs(ids);
    const t0 = performance.now();
    for (let i = 0; i < 6; i++) await steadyTransfers({ base: server.base, key, seconds: 3, rate: 300 }, pick);
    await steadyTransfers({ base: server.base, key, seconds: 3, rate }, pick);
    const from = performance.now() - t0;
    const c0 = server.cpuMs();
    const run = await steadyTransfers({ base: server.base, key, seconds: 20, rate }, pick);
    console.log(`window from ${(from / 1000).toFixed(1)} s after accounts; p50 ${run.p50} p99 ${run.p99}; cpu/transfer ${((server.cpuMs() - c0) / run.ok).toFixed(3)} ms`);
  } finally {
    await server.stop();
  }
});
