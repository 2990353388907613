import { execFileSync } from 'node:child_process';

export interface PgbenchResult {
  tps: number;
  latencyAvgMs: number;
}

/** Runs PostgreSQL's TPC-B-like pgbench against `dbUrl`: init at `scale`, then the timed run. */
export function pgbench(dbUrl: string, scale: number, durationSeconds: number): PgbenchResult {
  execFileSync('pgbench', ['-i', '-q', '-s', String(scale), dbUrl], { stdio: ['ignore', 'ignore', 'pipe'] });
  const out = execFileSync('pgbench', ['-n', '-c', '16', '-j', '2', '-T', String(durationSeconds), dbUrl], { encoding: 'utf8' });
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  const latency = /latency average = ([\d.]+) ms/.exec(out)?.[1];
  if (!tps) throw new Error(`could not read pgbench output:\n${out}`);
  return { tps: Number(tps), latencyAvgMs: Number(latency ?? NaN) };
}
