import { execFileSync } from 'node:child_process';
import { endedChildrenCpuMs, postgresCpuMs } from './server.js';

export interface PgbenchResult {
  tps: number;
  latencyAvgMs: number;
  /** CPU a transaction, in ms: PostgreSQL's processes and pgbench's own (its client threads). */
  cpu: { postgres: number; client: number };
  /** The command, for the report. */
  command: string;
}

/** Is pgbench on PATH? (Debian: postgresql-client or postgresql-contrib.) */
export function havePgbench(): boolean {
  try {
    execFileSync('pgbench', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `pgbench -i -s scale`: the TPC-B-like tables (100,000 accounts per scale unit). */
export function pgbenchInit(dbUrl: string, scale: number): void {
  execFileSync('pgbench', ['-i', '-q', '-s', String(scale), dbUrl], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * The timed run: `clients` clients on 2 threads, TPC-B-like by default or select-only (`-S`).
 * `-n` skips the vacuum so repeated runs on one database stay comparable.
 */
export function pgbenchRun(dbUrl: string, seconds: number, mode: 'tpcb' | 'select-only' = 'tpcb', clients = 16): PgbenchResult {
  const args = ['-n', '-c', String(clients), '-j', '2', '-T', String(seconds), ...(mode === 'select-only' ? ['-S'] : [])];
  const before = { postgres: postgresCpuMs(), client: endedChildrenCpuMs() };
  const out = execFileSync('pgbench', [...args, dbUrl], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  const latency = /latency average = ([\d.]+) ms/.exec(out)?.[1];
  const transactions = /number of transactions actually processed: (\d+)/.exec(out)?.[1];
  if (!tps) throw new Error(`could not read pgbench output:\n${out}`);
  const n = Number(transactions ?? NaN);
  const cpu = { postgres: (postgresCpuMs() - before.postgres) / n, client: (endedChildrenCpuMs() - before.client) / n };
  return { tps: Number(tps), latencyAvgMs: Number(latency ?? NaN), cpu, command: `pgbench ${args.join(' ')}` };
}
