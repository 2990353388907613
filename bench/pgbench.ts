import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { quantileMs } from './load.js';
import { admin, endedChildrenCpuMs, trackPostgresCpu, withDatabase } from './server.js';

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
 * A database of its own, named `name`, that `pgbench -i -s scale` initialized: handed to `work`
 * (its URL), then dropped whatever happens.
 */
export async function withPgbenchDatabase<T>(adminUrl: string, name: string, scale: number, work: (url: string) => Promise<T>): Promise<T> {
  await admin(adminUrl, (c) => c.query(`create database ${name}`));
  try {
    const url = withDatabase(adminUrl, name);
    pgbenchInit(url, scale);
    return await work(url);
  } finally {
    await admin(adminUrl, (c) => c.query(`drop database if exists ${name} with (force)`));
  }
}

/**
 * The timed run: `clients` clients on 2 threads, TPC-B-like by default or select-only (`-S`).
 * `-n` skips the vacuum so repeated runs on one database stay comparable.
 */
export async function pgbenchRun(
  dbUrl: string,
  seconds: number,
  mode: 'tpcb' | 'select-only' = 'tpcb',
  clients = 16,
): Promise<PgbenchResult> {
  const args = ['-n', '-c', String(clients), '-j', '2', '-T', String(seconds), ...(mode === 'select-only' ? ['-S'] : [])];
  // Sampled while it runs: pgbench's backends end with it, and their time with them.
  const postgres = trackPostgresCpu();
  const client = endedChildrenCpuMs();
  const { stdout: out } = await promisify(execFile)('pgbench', [...args, dbUrl], { encoding: 'utf8' });
  const postgresMs = postgres();
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out)?.[1];
  const latency = /latency average = ([\d.]+) ms/.exec(out)?.[1];
  const transactions = /number of transactions actually processed: (\d+)/.exec(out)?.[1];
  if (!tps) throw new Error(`could not read pgbench output:\n${out}`);
  const n = Number(transactions ?? NaN);
  const cpu = { postgres: postgresMs / n, client: (endedChildrenCpuMs() - client) / n };
  return { tps: Number(tps), latencyAvgMs: Number(latency ?? NaN), cpu, command: `pgbench ${args.join(' ')}` };
}

export interface PgbenchLatency {
  count: number;
  p50: number;
  p99: number;
  command: string;
}

/**
 * The latencies (ms) in pgbench's per-transaction log (`-l`), skipped transactions left out. With
 * `--rate`, the log's 3rd field already counts from when the transaction was scheduled: it
 * includes the schedule lag, which the 7th field gives again on its own. Adding the two counted
 * the lag twice.
 */
export function loggedLatenciesMs(log: string): number[] {
  const latencies: number[] = [];
  for (const line of log.split('\n')) {
    const f = line.split(' ');
    if (f.length < 7 || f[2] === 'skipped') continue;
    latencies.push(Number(f[2]) / 1000);
  }
  return latencies;
}

/** The latencies (ms) of every per-transaction log pgbench wrote into `dir` (one file per thread). */
export function latenciesOfLogDir(dir: string): number[] {
  return readdirSync(dir).flatMap((file) => loggedLatenciesMs(readFileSync(join(dir, file), 'utf8')));
}

/**
 * TPC-B at a fixed rate (`-R`), every transaction logged (`-l`): the database's own latency at the
 * rate our open-loop load offers. A transaction's latency counts from when it was scheduled (the
 * log's 3rd field), as the open-loop load counts ours from when a request was due, so a stall
 * delays what is queued behind it in both. Every transaction's latency (ms), and the command.
 */
export function pgbenchLatenciesAtRate(
  dbUrl: string,
  seconds: number,
  rate: number,
  clients = 16,
): { latencies: number[]; command: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fsapi-pgbench-log-'));
  const args = ['-n', '-c', String(clients), '-j', '2', '-T', String(seconds), '-R', String(rate), '-l'];
  try {
    execFileSync('pgbench', [...args, `--log-prefix=${join(dir, 'tx')}`, dbUrl], { stdio: ['ignore', 'ignore', 'pipe'] });
    return { latencies: latenciesOfLogDir(dir), command: `pgbench ${args.join(' ')}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The figures of pgbench's latencies, of one run or of several pooled (bench/tails.ts). */
export function pgbenchLatency(runs: { latencies: number[]; command: string }): PgbenchLatency {
  const latencies = [...runs.latencies].sort((a, b) => a - b);
  return { count: latencies.length, p50: quantileMs(latencies, 0.5), p99: quantileMs(latencies, 0.99), command: runs.command };
}
