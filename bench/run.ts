/**
 * The benchmark: each figure against a reference measured in the same run on the same machine.
 *
 *   npm run bench                       all scenarios (a few minutes)
 *   npm run bench -- --quick            the same, 5 s runs and 100,000 entries of history (a couple of minutes)
 *   npm run bench -- spread reads       only these scenarios (spread hot reads steady pglite bulk history requestlog
 *                                       fx core; "transfers" = spread hot)
 *   options: --duration S (each load run, default 10), --pgbench-duration S (default 20),
 *            --history-entries N (default 1000000), --json (the rows as JSON on stdout),
 *            --connections N (every load run, default 32), --peak-connections A,B,… (the throughput runs
 *            of spread, hot and reads at each, the best counts; default: --connections alone),
 *            --pgbench-clients A,B,… (each pgbench reference at each, the best counts; default 16)
 *
 * Needs PostgreSQL (BENCH_DATABASE_URL or DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres,
 * a role that may create databases) and pgbench on PATH (Debian: postgresql-client). It builds dist/,
 * starts `node dist/main.js` against databases of its own and drops them at the end. Never part of npm test.
 */
import { parseArgs } from 'node:util';
import { havePgbench } from './pgbench.js';
import { printTable, runBench, SCENARIOS, type Scenario } from './suite.js';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    quick: { type: 'boolean', default: false },
    duration: { type: 'string' },
    'pgbench-duration': { type: 'string' },
    'history-entries': { type: 'string' },
    connections: { type: 'string', default: '32' },
    'peak-connections': { type: 'string' },
    'pgbench-clients': { type: 'string', default: '16' },
    json: { type: 'boolean', default: false },
  },
});

const ALIASES: Record<string, Scenario[]> = { transfers: ['spread', 'hot'], all: [...SCENARIOS] };
const picked = positionals.length === 0 ? [...SCENARIOS] : positionals.flatMap((p) => ALIASES[p] ?? [p]);
const unknown = picked.filter((p) => !(SCENARIOS as readonly string[]).includes(p));
if (unknown.length > 0) {
  console.error(`Unknown scenario ${unknown.join(', ')}. Available: ${SCENARIOS.join(' ')} (or transfers, all)`);
  process.exit(2);
}
if (!havePgbench()) {
  console.error('pgbench is not on PATH: install it (Debian: apt-get install postgresql-client).');
  process.exit(2);
}

const quick = values.quick;
const number = (v: string | undefined, fallback: number) => (v === undefined ? fallback : Number(v));
const list = (v: string | undefined) => (v ?? '').split(',').map(Number);

runBench({
  adminUrl: process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  scenarios: new Set(picked as Scenario[]),
  loadSeconds: number(values.duration, quick ? 5 : 10),
  pgbenchSeconds: number(values['pgbench-duration'], quick ? 5 : 20),
  historyEntries: number(values['history-entries'], quick ? 100_000 : 1_000_000),
  connections: Number(values.connections),
  peakConnections: list(values['peak-connections'] ?? values.connections),
  pgbenchClients: list(values['pgbench-clients']),
  poolSize: Number(process.env.BENCH_POOL_SIZE ?? 24),
  accounts: 100,
})
  .then(({ rows, reconciled, header }) => {
    console.log(values.json ? JSON.stringify({ header, rows, reconciled }, null, 2) : `\n${printTable(rows, header, reconciled)}\n`);
    if (!reconciled) process.exitCode = 1;
  })
  .catch((err: unknown) => {
    console.error('benchmark failed:', err);
    process.exitCode = 1;
  });
