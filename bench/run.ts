/**
 * Load benchmarks that print ratios against references measured in the same run.
 *
 *   npm run bench -- transfers [--duration 20] [--only spread|hot]
 *
 * Needs PostgreSQL (BENCH_DATABASE_URL or DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 * and pgbench on PATH. It creates fresh databases and drops them at the end. Never part of npm test.
 */
import { parseArgs } from 'node:util';
import { benchTransfers } from './transfers.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { duration: { type: 'string', default: '20' }, only: { type: 'string' } },
});

const scenarios: Record<string, () => Promise<void>> = {
  transfers: () =>
    benchTransfers({
      adminUrl: process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
      durationSeconds: Number(values.duration),
      only: values.only as 'spread' | 'hot' | undefined,
    }),
};

const name = positionals[0] ?? 'transfers';
const run = scenarios[name];
if (!run) {
  console.error(`Unknown benchmark "${name}". Available: ${Object.keys(scenarios).join(', ')}`);
  process.exit(2);
}
run().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
