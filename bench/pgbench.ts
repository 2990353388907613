import { execFileSync } from 'node:child_process';

export interface PgbenchResult {
  tps: number;
  latencyAvgMs: number;
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
  const out = execFileSync('pgbench', [...args, dbUrl], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  const latency = /latency average = ([\d.]+) ms/.exec(out)?.[1];
  if (!tps) throw new Error(`could not read pgbench output:\n${out}`);
  return { tps: Number(tps), latencyAvgMs: Number(latency ?? NaN), command: `pgbench ${args.join(' ')}` };
}
