import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openPGlite, openPostgres, type DatabaseHandle } from '../src/db/client.js';
import { reconcile } from '../src/ledger/index.js';
import { LIMIT_ORDER_SCAN, scanWaitingOrders, settleDue, settleLimitOrder } from '../src/modules/fx/worker.js';
import { historyInTurns, seedHistory } from './history.js';
import { loadsInTurns, TURN_ROUNDS } from './turns.js';
import { accountReadLoad, fxOrderLoad, healthzLoad, transferBody, transferLoad, VIA_PROXY, type LoadResult } from './load.js';
import { pgbenchInit, pgbenchRun, type PgbenchResult } from './pgbench.js';
import {
  admin,
  anyOf,
  appConfig,
  build,
  customerAccounts,
  fundedAccounts,
  openAccounts,
  post,
  prepareDatabase,
  preparePGlite,
  randomPairs,
  resumed,
  scopePostgresCpu,
  START_FLAGS,
  startServer,
  trackPostgresCpu,
  withDatabase,
  type Server,
} from './server.js';
import { pauseProbe, pausesRow } from './pauses.js';
import { steadyTransfers } from './steady.js';
import { coreTransfers } from './core.js';
import { webhookBench } from './webhooks.js';
import { settledWriteSnapshot, writesPerTransfer, writesText } from './writes.js';
import { cpuRatioRow, healthzRatioRow, tailRatio, walRow } from './ratios.js';
import { tailsInTurns } from './tails.js';

export const SCENARIOS = ['spread', 'hot', 'reads', 'steady', 'pglite', 'bulk', 'history', 'requestlog', 'fx', 'core', 'webhooks'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface BenchOptions {
  adminUrl: string;
  scenarios: Set<Scenario>;
  /** Seconds of each load run (the server's side). */
  loadSeconds: number;
  /** Seconds of each pgbench reference run (`-T`). */
  pgbenchSeconds: number;
  /** Ledger entries seeded before the second history run. */
  historyEntries: number;
  /** Connections of every load run, and the lowest of the peak runs (PGlite, request log, FX and bulk compare with it). */
  connections: number;
  /**
   * The throughput runs (spread, hot account, reads) at each of these connection counts: the
   * server's maximum is the best of them, as the pgbench reference is the best of `pgbenchClients`.
   */
  peakConnections: number[];
  pgbenchClients: number[];
  poolSize: number;
  accounts: number;
}

export interface Row {
  name: string;
  measured: string;
  reference: string;
  ratio?: number;
  target: string;
  /** Whether the figure meets its target (undefined: no target or not measured). */
  met?: boolean;
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (n: number) => `${n.toFixed(2)}×`;
const failures = (r: LoadResult) => (r.failed > 0 ? ` (failed ${r.failed}: ${r.failures})` : '');

/**
 * The WAL position, WAL records (pg_stat_wal, server-wide) and transfers so far: what a load wrote.
 * `since` (an earlier reading) adds the WAL bytes written since.
 */
async function walAndTransfers(handle: DatabaseHandle, since?: { lsn: string }) {
  const { rows } = await sql<{ lsn: string; bytes: string; records: string; transfers: string }>`
    select pg_current_wal_lsn()::text as lsn,
      coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), ${since?.lsn ?? null}::pg_lsn), 0)::text as bytes,
      (select wal_records from pg_stat_wal)::text as records, (select count(*) from transfers)::text as transfers`.execute(handle.db);
  return rows[0]!;
}

/**
 * WAL bytes and records per transfer between two readings. Server-wide (other databases' writes
 * count too, none run during a load): what sets how often PostgreSQL switches WAL segments.
 */
function walPerTransfer(a: Awaited<ReturnType<typeof walAndTransfers>>, b: Awaited<ReturnType<typeof walAndTransfers>>) {
  const transfers = Number(b.transfers) - Number(a.transfers);
  if (transfers <= 0) return undefined;
  return { bytes: Number(b.bytes) / transfers, records: (Number(b.records) - Number(a.records)) / transfers, transfers };
}

/** This process's CPU so far, in ms: autocannon and the open-loop generator run in it. */
const benchCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** The warm-up's windows of transfers before a server's first figure (see `warmup` in runBench). */
const WARMUP_WINDOWS = { min: 6, max: 10 };

/**
 * CPU the server process, PostgreSQL and the load generator (this process) use from now until the
 * returned function is called, per transfer: what a transfer costs each, which throughput on a
 * machine's few cores is bound by.
 */
function cpuMeter(server: Server) {
  const start = { server: server.cpuMs(), load: benchCpuMs() };
  // Sampled through the window, not read at its two ends: a backend that ends inside it (one of
  // the pool's connections) keeps what it used instead of taking it out of the total.
  const postgres = trackPostgresCpu(1000);
  let postgresMs: number | undefined;
  return (transfers: number) => {
    postgresMs ??= postgres();
    const parts = postgres.parts();
    return {
      server: (server.cpuMs() - start.server) / transfers,
      postgres: postgresMs / transfers,
      // Where PostgreSQL's CPU went: a run whose PostgreSQL CPU a transfer doubled showed it in
      // the backends' user time (docs/benchmarks.md).
      postgresParts: { user: parts.backendsUser / transfers, system: parts.backendsSystem / transfers, cluster: parts.cluster / transfers },
      load: (benchCpuMs() - start.load) / transfers,
    };
  };
}

const pgbenchCpuText = (ref: PgbenchResult) =>
  Number.isFinite(ref.cpu.postgres)
    ? ` (CPU a transaction: PostgreSQL ${fmt(ref.cpu.postgres, 3)} ms, pgbench ${fmt(ref.cpu.client, 3)} ms)`
    : '';

type CpuPer = ReturnType<ReturnType<typeof cpuMeter>>;

/** CPU figures of several windows added up: a request's share over them all. */
function cpuTotals() {
  let sum = { server: 0, postgres: 0, user: 0, system: 0, cluster: 0, load: 0, count: 0 };
  return {
    add(c: CpuPer, count: number) {
      sum = {
        server: sum.server + c.server * count,
        postgres: sum.postgres + c.postgres * count,
        user: sum.user + c.postgresParts.user * count,
        system: sum.system + c.postgresParts.system * count,
        cluster: sum.cluster + c.postgresParts.cluster * count,
        load: sum.load + c.load * count,
        count: sum.count + count,
      };
    },
    count: () => sum.count,
    per(): CpuPer {
      const n = sum.count || 1;
      return {
        server: sum.server / n,
        postgres: sum.postgres / n,
        postgresParts: { user: sum.user / n, system: sum.system / n, cluster: sum.cluster / n },
        load: sum.load / n,
      };
    },
  };
}

const cpuText = (c: CpuPer, count: number, what = 'transfers') =>
  `server ${fmt(c.server, 3)} ms, PostgreSQL ${fmt(c.postgres, 3)} ms (its backends ${fmt(c.postgresParts.user, 3)} user + ` +
  `${fmt(c.postgresParts.system, 3)} system, its cluster's own processes ${fmt(c.postgresParts.cluster, 3)}), ` +
  `load generator ${fmt(c.load, 3)} ms (${fmt(count)} ${what})`;

/**
 * What a throughput target leaves of the machine's cores to each request (`rate` a second), against
 * what the load used: a target whose budget is below the measured total cannot be met on these
 * cores at that cost, whatever the concurrency.
 */
function cpuBudgetRow(what: string, rate: number, c: CpuPer): Row {
  const cores = cpus().length;
  const budget = (cores * 1000) / rate;
  const used = c.server + c.postgres + c.load;
  return {
    name: `CPU budget of the ${what} target`,
    measured: `${fmt(used, 3)} ms used a request (server, PostgreSQL and load generator above)`,
    reference: `${fmt(rate)}/s on ${cores} cores leaves ${fmt(budget, 3)} ms a request for all three`,
    ratio: budget / used,
    target: '',
  };
}

/**
 * A CHECKPOINT before loads taken in turns: they then start with every dirty page written, in
 * PostgreSQL's buffers and in the kernel's page cache (it fsyncs every file written since the last
 * one), and pay the same full-page writes. Else the bench's own set-up is written back during the
 * turns: the checkpoint that seeding a million entries set off beside the history turns, and the
 * kernel's write-back of `pgbench -i`'s tables (once they are 30 s old, by default) in the first
 * rounds of the tails. Without the right (not a superuser) the turns go as they are.
 */
async function checkpoint(adminUrl: string, before: string, log: (line: string) => void): Promise<void> {
  try {
    await admin(adminUrl, (c) => c.query('checkpoint'));
  } catch (err) {
    log(`CHECKPOINT refused (${(err as Error).message}): ${before} start without one`);
  }
}

/** Runs the selected scenarios; every database it creates is dropped at the end. */
export async function runBench(o: BenchOptions): Promise<{ rows: Row[]; reconciled: boolean; header: string }> {
  const stamp = `${Date.now().toString(36)}_${process.pid}`;
  const databases: string[] = [];
  const servers: Server[] = [];
  const handles: DatabaseHandle[] = [];
  const rows: Row[] = [];
  let reconciled = true;
  const has = (s: Scenario) => o.scenarios.has(s);
  const log = (line: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);

  const createDb = async (suffix: string) => {
    const name = `fsapi_bench_${stamp}_${suffix}`;
    await admin(o.adminUrl, (c) => c.query(`create database ${name}`));
    databases.push(name);
    return withDatabase(o.adminUrl, name);
  };
  const checkLedger = async (label: string, handle: DatabaseHandle) => {
    const report = await reconcile(handle.db);
    const ok = report.ok;
    reconciled &&= ok;
    log(
      `ledger reconcile (${label}): ${ok ? 'OK' : 'MISMATCH'}, ${report.transactions_checked} transactions, ${report.accounts_checked} accounts`,
    );
    if (!ok) console.error(JSON.stringify(report, null, 2));
  };
  const pairs = randomPairs;
  /** An app database with a business, its server and funded accounts. */
  const appOnPostgres = async (suffix: string, env: Record<string, string> = {}) => {
    const url = await createDb(suffix);
    const handle = openPostgres(url, 4);
    handles.push(handle);
    const { tenantId, key } = await prepareDatabase(handle);
    const server = await startServer({ dbUrl: url, poolSize: o.poolSize, env });
    servers.push(server);
    const ids = await fundedAccounts(server.base, key, o.accounts);
    return { handle, server, key, ids, tenantId };
  };
  const loadOpts = (server: Server, key: string, extra: { seconds?: number; connections?: number } = {}) => ({
    base: server.base,
    key,
    seconds: extra.seconds ?? o.loadSeconds,
    connections: extra.connections ?? o.connections,
  });
  /**
   * Transfers until the server's CPU a transfer has settled, so that each figure after it is the
   * server's steady cost: for the first twenty seconds or so of a load, V8 is still compiling the
   * hot code on background threads (CPU of the server's process) and runs the slower code
   * meanwhile. Windows of up to 3 s until one cost less than 3 % below the one before (six at
   * least, ten at most); the CPU a transfer of each window, in order.
   */
  const warmup = async (server: Server, key: string, ids: string[]) => {
    const seconds = Math.min(3, o.loadSeconds);
    const costs: number[] = [];
    while (costs.length < WARMUP_WINDOWS.max) {
      const at = server.cpuMs();
      const run = await transferLoad(loadOpts(server, key, { seconds }), pairs(ids));
      costs.push((server.cpuMs() - at) / Math.max(1, run.ok));
      if (costs.length >= WARMUP_WINDOWS.min && costs.at(-1)! >= costs.at(-2)! * 0.97) break;
    }
    log(`warmed up: server CPU a transfer in each ${seconds} s window ${costs.map((c) => fmt(c, 3)).join(', ')} ms`);
    return { seconds, costs };
  };
  /**
   * An open-loop load of transfers at `rate` for `seconds`, after up to 2 s at the same rate that
   * are not counted (`settling`, for the log): the figure is the latency of this load, not of the
   * server catching up after a pgbench reference kept it stopped, or meeting a new kind of request.
   */
  const settledSteady = async (server: Server, key: string, rate: number, seconds: number, pick: () => [string, string]) => {
    const settling = await steadyTransfers({ base: server.base, key, seconds: Math.min(2, seconds), rate }, pick);
    const pauses = await pauseProbe(server.base);
    const run = await steadyTransfers({ base: server.base, key, seconds, rate }, pick);
    return { settling, run, pauses: await pauses() };
  };

  /**
   * A throughput load at each of o.peakConnections: the best run is the server's maximum. A
   * server that gathers concurrent requests into batches is not saturated by the connections
   * that saturate pgbench (its batches fill with more), as pgbench is past its best with ours.
   */
  const atPeak = async (load: (connections: number) => Promise<LoadResult>) => {
    const runs: { connections: number; run: LoadResult }[] = [];
    for (const connections of o.peakConnections) runs.push({ connections, run: await load(connections) });
    const best = runs.reduce((a, b) => (b.run.perSecond > a.run.perSecond ? b : a));
    const sweep = runs.map((r) => `${r.connections}: ${fmt(r.run.perSecond)}/s`).join(', ');
    return { ...best, runs, label: runs.length > 1 ? `, best at ${best.connections} connections (${sweep})` : '' };
  };
  /**
   * GET /v1/accounts/{id} of random accounts among `ids`, after a short warm-up, at each peak
   * connection count; with the CPU each read cost the server and PostgreSQL over those runs.
   */
  const readsAtPeak = async (server: Server, key: string, ids: string[]) => {
    const pick = () => anyOf(ids);
    await accountReadLoad(loadOpts(server, key, { seconds: Math.min(2, o.loadSeconds) }), pick);
    const cpu = cpuMeter(server);
    const peak = await atPeak((connections) => accountReadLoad(loadOpts(server, key, { connections }), pick));
    const served = peak.runs.reduce((n, r) => n + r.run.ok, 0);
    return { ...peak, served, cpu: cpu(served) };
  };

  /** A load whose server and PostgreSQL CPU (of its window alone) is added to `totals`. */
  const metered = async (server: Server, totals: ReturnType<typeof cpuTotals>, run: () => Promise<LoadResult>) => {
    const meter = cpuMeter(server);
    const result = await run();
    if (result.ok > 0) totals.add(meter(result.ok), result.ok);
    return result;
  };

  /** pgbench references, measured while our server is paused (SIGSTOP) so it has the CPU. */
  const references = new Map<string, PgbenchResult>();
  const pgbenchDbs = new Map<number, string>();
  const reference = async (scale: number, mode: 'tpcb' | 'select-only', paused: Server[]) => {
    const id = `${scale}:${mode}`;
    const known = references.get(id);
    if (known) return known;
    // Let requests still in flight when the load stopped commit: a paused server must hold no locks.
    await new Promise((r) => setTimeout(r, 1000));
    paused.forEach((s) => s.pause());
    try {
      const url = await pgbenchDb(scale);
      // PostgreSQL's best: on two cores TPC-B peaks at few clients (more contend on the same rows).
      let best: PgbenchResult | undefined;
      const seen: string[] = [];
      for (const clients of o.pgbenchClients) {
        log(`pgbench ${mode} -s ${scale}, ${clients} clients, ${o.pgbenchSeconds} s`);
        const result = await pgbenchRun(url, o.pgbenchSeconds, mode, clients);
        seen.push(`-c ${clients}: ${fmt(result.tps)}`);
        if (!best || result.tps > best.tps) best = result;
      }
      const result = seen.length > 1 ? { ...best!, command: `${best!.command}; best of ${seen.join(', ')}` } : best!;
      references.set(id, result);
      return result;
    } finally {
      await resumed(...paused);
    }
  };

  const pgbenchDb = async (scale: number) => {
    let url = pgbenchDbs.get(scale);
    if (!url) {
      url = await createDb(`pgbench_s${scale}`);
      log(`pgbench -i -s ${scale}`);
      pgbenchInit(url, scale);
      pgbenchDbs.set(scale, url);
    }
    return url;
  };
  /**
   * Our p99 at `rate`, pgbench's TPC-B -s 10 at that rate and the floor's (bench/floor-server.ts),
   * in turns (bench/tails.ts) after a CHECKPOINT: five rounds of `seconds` ÷ 2.5 each, twice a
   * continuous run's samples, as the tail of a few seconds is mostly whether the disk stalled in them.
   */
  const tails = async (server: Server, key: string, rate: number, seconds: number, pick: () => [string, string]) => {
    const scale = 10;
    const rounds = 5;
    log(`tails at ${rate}/s: ours, pgbench TPC-B -s ${scale} at -R ${rate}, the floor, in ${rounds} turns`);
    const pgbenchUrl = await pgbenchDb(scale);
    await checkpoint(o.adminUrl, 'the tails', log);
    return tailsInTurns({
      server,
      ours: (s) => steadyTransfers({ base: server.base, key, seconds: s, rate }, pick),
      pgbenchUrl,
      scale,
      rate,
      rounds,
      slice: Math.max(1, Math.round((2 * seconds) / rounds)),
      log,
    });
  };

  const cores = cpus().length;
  const sweeps =
    o.peakConnections.length > 1 || o.pgbenchClients.length > 1
      ? ` (throughput runs at each of ${o.peakConnections.join(', ')}; pgbench at -c ${o.pgbenchClients.join(', ')})`
      : '';
  const serverCommand = ['node', ...START_FLAGS, 'dist/main.js'].join(' ');
  const header =
    `${cores} CPUs, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the start; server: ${serverCommand} (PROFILE=production, LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'info'}, ` +
    `pool ${o.poolSize}); load: autocannon, ${o.connections} connections${sweeps}, ${o.accounts} funded NGN accounts, amount 1.00, fresh Idempotency-Key per request`;

  let pgSpread: LoadResult | undefined;
  try {
    await scopePostgresCpu(o.adminUrl, `fsapi_bench_${stamp}_`);
    log('building dist/ (npm run build)');
    build();
    const needsMain = (['spread', 'hot', 'reads', 'steady', 'bulk', 'pglite', 'fx', 'core'] as const).some(has);
    if (needsMain) {
      const main = await appOnPostgres('app');
      const { server, key, ids, handle, tenantId } = main;
      log(`main server up at ${server.base}; warming up`);
      const warm = await warmup(server, key, ids);
      rows.push({
        name: 'server CPU per transfer while it warms up (before every figure below)',
        measured: `${warm.costs.map((c) => fmt(c, 3)).join(', ')} ms in each ${warm.seconds} s of the spread load`,
        reference: '',
        target: '',
      });

      // The spread load's WAL, writes and CPU per transfer, for its rows below.
      let wal: { bytes: number; records: number; transfers: number } | undefined;
      let spreadCpu: ReturnType<ReturnType<typeof cpuMeter>> | undefined;
      let writes: ReturnType<typeof writesPerTransfer> | undefined;
      if (has('spread') || has('pglite') || has('fx')) {
        log('spread: transfers among all accounts, as fast as they go');
        const written = await settledWriteSnapshot(handle);
        const before = await walAndTransfers(handle);
        const cpu = cpuMeter(server);
        pgSpread = await transferLoad(loadOpts(server, key), pairs(ids));
        wal = walPerTransfer(before, await walAndTransfers(handle, before));
        if (wal) spreadCpu = cpu(wal.transfers);
        if (wal) writes = writesPerTransfer(written, await settledWriteSnapshot(handle), wal.transfers);
      }
      if (has('spread') && pgSpread) {
        const first = pgSpread;
        const peak = await atPeak((connections) =>
          connections === o.connections ? Promise.resolve(first) : transferLoad(loadOpts(server, key, { connections }), pairs(ids)),
        );
        const ref = await reference(10, 'tpcb', [server]);
        const r = peak.run.perSecond / ref.tps;
        rows.push({
          name: `transfers/s over HTTP, ${o.accounts} accounts`,
          measured: `${fmt(peak.run.perSecond)}/s, p50 ${peak.run.p50} ms, p99 ${peak.run.p99} ms${failures(peak.run)}${peak.label}`,
          reference: `pgbench TPC-B -s 10 (${ref.command}): ${fmt(ref.tps)} tps${pgbenchCpuText(ref)}`,
          ratio: r,
          target: '≥ 2.0×',
          met: r >= 2,
        });
        if (wal) rows.push(walRow(wal, writes && { rows: writes.rows, indexEntries: writes.indexEntries, text: writesText(writes) }));
        if (wal && spreadCpu) {
          rows.push({ name: 'CPU per transfer (the spread load)', measured: cpuText(spreadCpu, wal.transfers), reference: '', target: '' });
          rows.push(cpuRatioRow(spreadCpu));
          rows.push(cpuBudgetRow('spread', 2 * ref.tps, spreadCpu));
        }
        const rate = Math.max(1, Math.floor(peak.run.perSecond / 2));
        // The reference above kept the server stopped (SIGSTOP) for its whole run.
        log(`half load: ${rate} transfers/s, after settling at that rate`);
        const { settling, run: half, pauses } = await settledSteady(server, key, rate, o.loadSeconds, pairs(ids));
        log(`half load: the settling before it, not counted: p50 ${settling.p50} ms, p99 ${settling.p99} ms`);
        rows.push({
          name: 'latency at half the maximum',
          measured: `${fmt(half.perSecond)}/s served of ${rate}/s offered: p50 ${half.p50} ms, p99 ${half.p99} ms${failures(half)}`,
          reference: '',
          target: 'p99 < 50 ms',
          met: half.p99 < 50 && half.failed === 0,
        });
        rows.push(tailRatio(`half the maximum (${fmt(rate)}/s)`, await tails(server, key, rate, o.loadSeconds, pairs(ids))));
        rows.push(pausesRow(`half the maximum`, pauses, o.loadSeconds, half.ok));
      }
      if (has('core')) {
        // The same batch path, called in this process: what the HTTP layer, the Idempotency-Key
        // claims and the request log add to a transfer shows in the distance to the spread load.
        log('core: the batch path in the bench process, without HTTP or Idempotency-Keys');
        server.pause();
        const core = await coreTransfers(handle, tenantId, pairs(ids), o.loadSeconds).finally(() => server.resume());
        const ref = await reference(10, 'tpcb', [server]);
        const r = core.perSecond / ref.tps;
        rows.push({
          name: 'transfers/s in-process (the batch path alone: batches of 32, 2 in flight, no HTTP or Idempotency-Key)',
          measured:
            `${fmt(core.perSecond)}/s (${fmt(core.transfers)} transfers, ${fmt(core.refused)} refused); CPU per transfer: ` +
            `this process ${fmt(core.cpu.process, 2)} ms, PostgreSQL ${fmt(core.cpu.postgres, 2)} ms`,
          reference: `pgbench TPC-B -s 10: ${fmt(ref.tps)} tps`,
          ratio: r,
          target: '',
        });
      }
      if (has('hot')) {
        log('hot account: every transfer debits the same account');
        const hot = ids[0]!;
        const others = ids.slice(1);
        const { run, label } = await atPeak((connections) =>
          transferLoad(loadOpts(server, key, { connections }), () => [hot, anyOf(others)]),
        );
        const ref = await reference(1, 'tpcb', [server]);
        const r = run.perSecond / ref.tps;
        rows.push({
          name: 'hot-account transfers/s',
          measured: `${fmt(run.perSecond)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms${failures(run)}${label}`,
          reference: `pgbench TPC-B -s 1: ${fmt(ref.tps)} tps${pgbenchCpuText(ref)}`,
          ratio: r,
          target: '≥ 1.0×',
          met: r >= 1,
        });
      }
      if (has('reads')) {
        log('reads: GET /v1/accounts/{id}');
        const { run, label, served, cpu } = await readsAtPeak(server, key, ids);
        const ref = await reference(10, 'select-only', [server]);
        const r = run.perSecond / ref.tps;
        rows.push({
          name: 'GET /v1/accounts/{id} req/s',
          measured: `${fmt(run.perSecond)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms${failures(run)}${label}`,
          reference: `pgbench select-only -S -s 10: ${fmt(ref.tps)} tps${pgbenchCpuText(ref)}`,
          ratio: r,
          target: '≥ 0.5×',
          met: r >= 0.5,
        });
        rows.push({ name: 'CPU per account read (the reads load)', measured: cpuText(cpu, served, 'reads'), reference: '', target: '' });
        rows.push(cpuBudgetRow('reads', 0.5 * ref.tps, cpu));
        // What the HTTP layer alone serves on this machine (no key, no database, no request log):
        // a ceiling for any /v1 read, with the same reference.
        const bare = await healthzLoad(loadOpts(server, key));
        rows.push({
          name: 'GET /healthz req/s (the HTTP layer alone: a ceiling for reads)',
          measured: `${fmt(bare.perSecond)}/s, p50 ${bare.p50} ms, p99 ${bare.p99} ms${failures(bare)}`,
          reference: `pgbench select-only -S -s 10: ${fmt(ref.tps)} tps`,
          ratio: bare.perSecond / ref.tps,
          target: '',
        });
        // The ratio's two CPU figures in turns on this server (bench/turns.ts): taken one after
        // the other, /healthz alone moved by a third between runs on a noisy machine.
        const sides = { read: { load: accountReadLoad, cpu: cpuTotals() }, healthz: { load: healthzLoad, cpu: cpuTotals() } };
        await loadsInTurns(
          (side, seconds) => metered(server, side.cpu, () => side.load(loadOpts(server, key, { seconds }), () => anyOf(ids))),
          sides,
          ['read', 'healthz'],
          o.loadSeconds,
          (round, last) =>
            log(
              `reads and /healthz in turns, round ${round} of ${TURN_ROUNDS}: ${fmt(last.read.perSecond)} reads/s, ${fmt(last.healthz.perSecond)} /healthz/s`,
            ),
        );
        rows.push(healthzRatioRow(sides.read.cpu.per(), sides.read.cpu.count(), sides.healthz.cpu.per(), sides.healthz.cpu.count()));
      }
      if (has('steady')) {
        const seconds = Math.max(o.loadSeconds, Math.min(10, o.loadSeconds * 2));
        log(`steady: 100 transfers/s for ${seconds} s`);
        const pauses = await pauseProbe(server.base);
        const cpu = cpuMeter(server);
        const run = await steadyTransfers({ base: server.base, key, seconds, rate: 100 }, pairs(ids));
        const steadyCpu = cpu(run.ok);
        const steadyPauses = await pauses();
        rows.push({
          name: 'latency at a steady 100 transfers/s',
          measured: `${fmt(run.perSecond)}/s served of 100/s offered: p50 ${run.p50} ms, p99 ${run.p99} ms${failures(run)}`,
          reference: '',
          target: 'p50 < 5 ms',
          met: run.p50 < 5 && run.failed === 0,
        });
        rows.push(tailRatio('a steady 100 transfers/s', await tails(server, key, 100, seconds, pairs(ids))));
        rows.push(pausesRow('a steady 100 transfers/s', steadyPauses, seconds, run.ok));
        rows.push({
          name: 'CPU per transfer at a steady 100/s (batches of one)',
          measured: cpuText(steadyCpu, run.ok),
          reference: '',
          target: '',
        });
        // The same load from customers' accounts: each transfer also reads the sender's KYC level,
        // takes their spending lock and reads their day's counter (docs/money-path.md).
        const customers = await customerAccounts(server.base, key, 20);
        const fromCustomers = (): [string, string] => [anyOf(customers), anyOf(ids)];
        const { run: own } = await settledSteady(server, key, 100, seconds, fromCustomers);
        rows.push({
          name: "latency at a steady 100 transfers/s from customers' accounts (KYC limits, daily counters)",
          measured: `${fmt(own.perSecond)}/s served of 100/s offered: p50 ${own.p50} ms, p99 ${own.p99} ms${failures(own)}`,
          reference: '',
          target: '',
        });
      }
      if (has('bulk')) rows.push(await bulk(server, key, ids));
      // Last on this server, and before it stops: the reconcile below then covers the FX postings too.
      if (has('fx') && pgSpread) rows.push(...(await fx(server, handle, key, ids, pgSpread)));
      const rss = server.peakRssMiB();
      rows.push({
        name: 'server peak RSS (PostgreSQL)',
        measured: `${fmt(rss)} MiB`,
        reference: '',
        target: '< 256 MB',
        met: rss * 1.048576 < 256,
      });
      await server.stop();
      await checkLedger('main PostgreSQL database', handle);
    }

    if (has('requestlog')) {
      // The API request log (dashboard) is on by default: what it costs the transfers and the
      // reads, against a server of the same build with REQUEST_LOG=off, each on a database of its
      // own, the two taking turns (bench/turns.ts). Run one after the other, the later server (the
      // log-off one) was the slower by a quarter on a noisy machine (docs/benchmarks.md).
      log('requestlog: a server with the request log on and one with REQUEST_LOG=off, in turns');
      const apps = { on: await appOnPostgres('logon'), off: await appOnPostgres('nolog', { REQUEST_LOG: 'off' }) };
      for (const app of Object.values(apps)) await warmup(app.server, app.key, app.ids);
      const inTurns = async (what: string, load: (app: (typeof apps)['on'], seconds: number) => Promise<LoadResult>) => {
        const cpu = { on: cpuTotals(), off: cpuTotals() };
        const runs = { on: { ...apps.on, cpu: cpu.on }, off: { ...apps.off, cpu: cpu.off } };
        const turns = await loadsInTurns(
          (run, seconds) => metered(run.server, run.cpu, () => load(run, seconds)),
          runs,
          ['on', 'off'],
          o.loadSeconds,
          (round, last) =>
            log(
              `requestlog ${what} in turns, round ${round} of ${TURN_ROUNDS}: log on ${fmt(last.on.perSecond)}/s, off ${fmt(last.off.perSecond)}/s`,
            ),
        );
        const text = (side: 'on' | 'off') =>
          `${fmt(turns[side].perSecond)}/s, p50 ${turns[side].p50} ms, p99 ${turns[side].p99} ms of its turns${failures(turns[side])}, ` +
          `peak RSS ${fmt(apps[side].server.peakRssMiB())} MiB; ${cpuText(cpu[side].per(), cpu[side].count(), what)}`;
        return { turns, text };
      };
      const transfers = await inTurns('transfers', (app, seconds) =>
        transferLoad(loadOpts(app.server, app.key, { seconds }), pairs(app.ids)),
      );
      rows.push({
        name: `transfers/s with the request log on (the default), ${TURN_ROUNDS} turns each`,
        measured: transfers.text('on'),
        reference: `REQUEST_LOG=off: ${transfers.text('off')}`,
        ratio: transfers.turns.on.perSecond / transfers.turns.off.perSecond,
        target: '',
      });
      // A read writes a log row too (bodies and all, as #14 asks): what that costs the reads.
      const reads = await inTurns('reads', (app, seconds) =>
        accountReadLoad(loadOpts(app.server, app.key, { seconds }), () => anyOf(app.ids)),
      );
      rows.push({
        name: `GET /v1/accounts/{id} req/s with the request log on (the default), ${TURN_ROUNDS} turns each`,
        measured: reads.text('on'),
        reference: `REQUEST_LOG=off: ${reads.text('off')}`,
        ratio: reads.turns.on.perSecond / reads.turns.off.perSecond,
        target: '',
      });
      for (const app of Object.values(apps)) {
        await app.server.stop();
        await checkLedger(app === apps.on ? 'request log on database' : 'request log off database', app.handle);
      }
    }

    if (has('pglite') && pgSpread) {
      log('pglite: the same spread load on the embedded database');
      const dataDir = mkdtempSync(join(tmpdir(), 'fsapi-bench-pglite-'));
      const { key } = await preparePGlite(dataDir);
      const server = await startServer({ dataDir, poolSize: o.poolSize });
      servers.push(server);
      try {
        const ids = await fundedAccounts(server.base, key, o.accounts);
        await warmup(server, key, ids);
        const run = await transferLoad(loadOpts(server, key), pairs(ids));
        const r = run.perSecond / pgSpread.perSecond;
        rows.push({
          name: 'PGlite transfers/s',
          measured: `${fmt(run.perSecond)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms${failures(run)}`,
          reference: `the same load on PostgreSQL: ${fmt(pgSpread.perSecond)}/s`,
          ratio: r,
          target: '≥ 0.25×',
          met: r >= 0.25,
        });
        rows.push({ name: 'server peak RSS (PGlite)', measured: `${fmt(server.peakRssMiB())} MiB`, reference: '', target: '' });
      } finally {
        await server.stop();
      }
      const handle = await openPGlite({ dataDir: `${dataDir}/pglite` });
      try {
        await checkLedger('PGlite', handle);
      } finally {
        await handle.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    }

    if (has('webhooks')) {
      const handle = openPostgres(await createDb('webhooks'), 8);
      handles.push(handle);
      rows.push(...(await webhookBench(handle, log)));
    }

    if (has('history')) {
      // Two servers of this build, one on an empty ledger and one on a ledger seeded with history,
      // their loads taking turns (bench/history.ts): both meet the machine's same minutes.
      log(`history: transfers/s on a ledger of ${fmt(o.historyEntries)} entries and on an empty one, in turns`);
      const empty = await appOnPostgres('history_empty');
      const full = await appOnPostgres('history');
      log(`seeding ${fmt(o.historyEntries)} ledger entries`);
      const started = Date.now();
      await seedHistory(full.handle.db, { tenantId: full.tenantId, environment: 'sandbox' }, full.ids, o.historyEntries);
      log(`seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      for (const app of [empty, full]) await warmup(app.server, app.key, app.ids);
      await checkpoint(o.adminUrl, 'the history turns', log);
      const turns = await historyInTurns(
        (app, seconds) => transferLoad(loadOpts(app.server, app.key, { seconds }), pairs(app.ids)),
        { empty, full },
        o.loadSeconds,
        log,
      );
      const r = turns.full.perSecond / turns.empty.perSecond;
      rows.push({
        name: `transfers/s with ${fmt(o.historyEntries)} ledger entries (${turns.rounds} turns each)`,
        measured: `${fmt(turns.full.perSecond)}/s, p99 of its turns ${turns.full.p99} ms${failures(turns.full)}`,
        reference: `an empty ledger, a second server taking turns: ${fmt(turns.empty.perSecond)}/s, p99 of its turns ${turns.empty.p99} ms`,
        ratio: r,
        target: '≥ 0.9×',
        met: r >= 0.9,
      });
      for (const app of [empty, full]) {
        await app.server.stop();
        await checkLedger(app === full ? 'history database' : 'empty-ledger database', app.handle);
      }
    }
  } finally {
    for (const s of servers) await s.stop().catch(() => {});
    for (const h of handles) await h.close().catch(() => {});
    await admin(o.adminUrl, async (c) => {
      for (const name of databases) await c.query(`drop database if exists ${name} with (force)`);
    });
  }
  return { rows, reconciled, header };

  /** POST /v1/transfers/bulk, when the server has it: transfers completed per second through it. */
  async function bulk(server: Server, key: string, ids: string[]): Promise<Row> {
    const spec = (await (await fetch(`${server.base}/v1/openapi.json`, { headers: VIA_PROXY })).json()) as {
      paths?: Record<string, unknown>;
    };
    if (!spec.paths?.['/v1/transfers/bulk']) {
      return {
        name: 'bulk transfers/s (POST /v1/transfers/bulk)',
        measured: 'n/a (no such route in this server)',
        reference: '',
        target: '',
      };
    }
    log('bulk: POST /v1/transfers/bulk, 1,000 transfers per request');
    const pick = pairs(ids);
    const batch = () => ({
      transfers: Array.from({ length: 1000 }, (_, i) => {
        const [from, to] = pick();
        return { client_reference: `bulk-${randomUUID()}-${i}`, ...transferBody(from, to) };
      }),
    });
    const deadline = Date.now() + o.loadSeconds * 1000;
    let completed = 0;
    let failedItems = 0;
    let requests = 0;
    const statuses = new Map<number, number>();
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < deadline) {
          const res = await post(server.base, key, '/v1/transfers/bulk', batch());
          requests++;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const items = itemsOf(res.body.data);
          completed += items.filter(isCompleted).length;
          failedItems += items.length - items.filter(isCompleted).length;
        }
      }),
    );
    const perSecond = completed / ((Date.now() - started) / 1000);
    const codes = [...statuses].map(([s, n]) => `${s}x${n}`).join(' ');
    return {
      name: 'bulk transfers/s (POST /v1/transfers/bulk, 1,000 per request, 4 at a time)',
      measured: `${fmt(perSecond)}/s (${requests} requests: ${codes}; items not completed ${failedItems})`,
      reference: pgSpread ? `single transfers: ${fmt(pgSpread.perSecond)}/s` : '',
      ...(pgSpread ? { ratio: perSecond / pgSpread.perSecond } : {}),
      target: '',
    };
  }

  /** POST /v1/fx/orders, market orders from the funded NGN accounts to as many USD accounts of the business. */
  async function fx(server: Server, handle: DatabaseHandle, key: string, ngn: string[], spread: LoadResult): Promise<Row[]> {
    log(`fx: market orders, 100.00 NGN sold for USD, ${o.accounts} NGN + ${o.accounts} USD accounts`);
    const usd = await openAccounts(server.base, key, o.accounts, 'USD');
    const pick = (): [string, string] => [anyOf(ngn), anyOf(usd)];
    // A route the server has not served yet: its first requests pay for compiling its code.
    await fxOrderLoad(loadOpts(server, key, { seconds: Math.min(3, o.loadSeconds) }), pick);
    const run = await fxOrderLoad(loadOpts(server, key), pick);
    const market: Row = {
      name: `FX market orders/s over HTTP, ${o.accounts} + ${o.accounts} accounts`,
      measured: `${fmt(run.perSecond)}/s, p50 ${run.p50} ms, p99 ${run.p99} ms${failures(run)}`,
      reference: `spread transfers on the same server: ${fmt(spread.perSecond)}/s`,
      ratio: run.perSecond / spread.perSecond,
      target: '',
    };
    return [market, await dueLimitOrders(server, handle, key, pick)];
  }

  /**
   * Limit orders whose target the rate has reached, settled by the worker's pass (fx/worker.ts,
   * run here on the bench's own connections: the server runs no workers), together as the worker
   * settles them, against the same pass settling each order alone (as before #16).
   */
  async function dueLimitOrders(server: Server, handle: DatabaseHandle, key: string, pick: () => [string, string]): Promise<Row> {
    const [aloneCount, togetherCount] = o.loadSeconds < 10 ? [200, 1000] : [500, 2000];
    const place = async (count: number) => {
      for (let i = 0; i < count; i += 25) {
        await Promise.all(
          Array.from({ length: Math.min(25, count - i) }, async () => {
            const [from, to] = pick();
            // The bid (about 0.00064 USD per NGN) is above the target: due at the worker's first look.
            const body = {
              order_type: 'limit',
              side: 'sell',
              pair: { base: 'NGN', quote: 'USD' },
              amount: '100.00',
              target_rate: '0.0005',
            };
            const res = await post(server.base, key, '/v1/fx/orders', { ...body, source_id: from, destination_id: to });
            if (res.status !== 200) throw new Error(`limit order: ${res.status} ${JSON.stringify(res.body)}`);
          }),
        );
      }
    };
    const config = appConfig();
    /** One pass of the worker over every waiting order; settled orders per second. */
    const pass = async (settle: (due: string[]) => Promise<void>) => {
      const since = new Date(Date.now() + 60_000);
      let settled = 0;
      const start = performance.now();
      for (;;) {
        const { claimed, due } = await scanWaitingOrders(handle.db, since, LIMIT_ORDER_SCAN);
        await settle(due);
        settled += due.length;
        if (claimed < LIMIT_ORDER_SCAN) break;
      }
      return { settled, perSecond: settled / ((performance.now() - start) / 1000) };
    };
    log(`fx: ${aloneCount} due limit orders settled one by one, then ${togetherCount} as the worker settles them`);
    await place(aloneCount);
    const alone = await pass(async (due) => {
      for (const id of due) await settleLimitOrder(handle.db, config, id);
    });
    await place(togetherCount);
    const together = await pass((due) => settleDue(handle.db, config, due, []));
    return {
      name: `due FX limit orders settled/s by the worker (batches of up to ${LIMIT_ORDER_SCAN})`,
      measured: `${fmt(together.perSecond)}/s (${fmt(together.settled)} orders)`,
      reference: `the same pass settling each order alone: ${fmt(alone.perSecond)}/s (${fmt(alone.settled)} orders)`,
      ratio: together.perSecond / alone.perSecond,
      target: '',
    };
  }
}

/** The per-transfer results in a bulk answer: the first array found in its data. */
function itemsOf(data: unknown): Record<string, unknown>[] {
  if (Array.isArray(data)) return data as Record<string, unknown>[];
  if (data && typeof data === 'object') {
    for (const value of Object.values(data)) if (Array.isArray(value)) return value as Record<string, unknown>[];
  }
  return [];
}

function isCompleted(item: Record<string, unknown>): boolean {
  const nested = item.transfer as Record<string, unknown> | undefined;
  return item.status === 'completed' || nested?.status === 'completed';
}

export function printTable(rows: Row[], header: string, reconciled: boolean): string {
  const lines = [`Benchmark ${new Date().toISOString()}: ${header}`, ''];
  for (const r of rows) {
    const verdict = r.met === undefined ? '' : r.met ? '  [target met]' : '  [below target]';
    lines.push(`${r.name}`);
    lines.push(`    ${r.measured}`);
    if (r.reference) lines.push(`    reference: ${r.reference}`);
    if (r.ratio !== undefined || r.target)
      lines.push(
        `    ${r.ratio !== undefined ? `ratio ${ratio(r.ratio)}` : ''}${r.target ? `${r.ratio !== undefined ? ', ' : ''}target ${r.target}` : ''}${verdict}`,
      );
  }
  lines.push('', `ledger reconcile after every run: ${reconciled ? 'OK' : 'MISMATCH'}`);
  return lines.join('\n');
}
