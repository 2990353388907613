/**
 * Every WAL record one transfer writes, by kind and relation: transfers at a steady rate against
 * a server of its own, then `pg_waldump` over the WAL they wrote, summed per record kind and table
 * or index of the bench's database (other databases' records are counted apart). Needs to read
 * the cluster's pg_wal (run it as its owner or root, against a local cluster; a cluster of your own
 * keeps other users' writes and checkpoints out of the window):
 *
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5499/postgres npx tsx bench/wal-breakdown.ts [rate] [seconds]
 *
 * The rows and index entries behind it (pg_stat_user_tables) are printed first.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { sql } from 'kysely';
import { fundedAccounts, randomPairs, startServer, withBenchDatabase } from './server.js';
import { steadyTransfers } from './steady.js';
import { settledWriteSnapshot, writesPerTransfer, writesText } from './writes.js';

const adminUrl = process.env.BENCH_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const [rate = 200, seconds = 5] = process.argv.slice(2).map(Number);
const name = `fsapi_bench_wal_${process.pid}`;

/** PG_WALDUMP, else Debian's path for the server's major version, else pg_waldump on PATH. */
function waldump(major: number): string {
  if (process.env.PG_WALDUMP) return process.env.PG_WALDUMP;
  const debian = `/usr/lib/postgresql/${major}/bin/pg_waldump`;
  return existsSync(debian) ? debian : 'pg_waldump';
}

/** Sums pg_waldump's records between two positions: per record kind and relation of `dbOid`. */
function breakdown(
  major: number,
  walDir: string,
  start: string,
  end: string,
  dbOid: string,
  names: Map<string, string>,
  transfers: number,
) {
  const out = execFileSync(waldump(major), ['-p', walDir, '-s', start, '-e', end], { encoding: 'utf8', maxBuffer: 1 << 30 });
  // `rec` is a record without its full-page images: what it costs whenever no checkpoint (another
  // session's DROP DATABASE on a shared cluster requests one) falls inside the window.
  const bytes = new Map<string, { bytes: number; rec: number; records: number; fpi: number }>();
  let elsewhere = 0;
  for (const line of out.split('\n')) {
    const m = /^rmgr: (\S+)\s+len \(rec\/tot\):\s+(\d+)\/\s*(\d+), tx:.*?desc: (\S+)(.*)$/.exec(line);
    if (!m) continue;
    const [, rmgr, rec, total, desc, rest] = m;
    const rel = / rel \d+\/(\d+)\/(\d+)/.exec(rest!);
    if (rel && rel[1] !== dbOid) {
      elsewhere += Number(total);
      continue;
    }
    const key = `${rmgr} ${desc} ${rel ? (names.get(rel[2]!) ?? rel[2]) : ''}`.trim();
    const b = bytes.get(key) ?? { bytes: 0, rec: 0, records: 0, fpi: 0 };
    b.bytes += Number(total);
    b.rec += Number(rec);
    b.records++;
    if (rest!.includes('FPW')) b.fpi++;
    bytes.set(key, b);
  }
  const all = [...bytes.values()].reduce((a, b) => ({ bytes: a.bytes + b.bytes, rec: a.rec + b.rec, records: a.records + b.records }), {
    bytes: 0,
    rec: 0,
    records: 0,
  });
  const kib = (n: number) => (n / transfers / 1024).toFixed(2);
  console.log(
    `WAL of the bench's database: ${kib(all.bytes)} KiB (${kib(all.rec)} KiB without full-page images) and` +
      ` ${(all.records / transfers).toFixed(1)} records a transfer (other databases: ${(elsewhere / transfers).toFixed(0)} B a transfer)`,
  );
  console.log('| bytes a transfer | without page images | records | full-page images | record, relation |\n|---:|---:|---:|---:|---|');
  for (const [key, b] of [...bytes].sort((x, y) => y[1].bytes - x[1].bytes)) {
    if (b.bytes / transfers < 1) continue;
    const per = (n: number) => (n / transfers).toFixed(2);
    console.log(`| ${(b.bytes / transfers).toFixed(0)} | ${(b.rec / transfers).toFixed(0)} | ${per(b.records)} | ${per(b.fpi)} | ${key} |`);
  }
}

await withBenchDatabase(adminUrl, name, async ({ url, handle, key }) => {
  const server = await startServer({ dbUrl: url, poolSize: 8 });
  try {
    const ids = await fundedAccounts(server.base, key, 20);
    const pick = randomPairs(ids);
    await steadyTransfers({ base: server.base, key, seconds: 2, rate }, pick);
    const before = await settledWriteSnapshot(handle);
    const at = async () =>
      (
        await sql<{
          lsn: string;
          n: string;
        }>`select pg_current_wal_lsn()::text as lsn, (select count(*) from transfers)::text as n`.execute(handle.db)
      ).rows[0]!;
    const start = await at();
    const run = await steadyTransfers({ base: server.base, key, seconds, rate }, pick);
    const after = await settledWriteSnapshot(handle);
    const end = await at();
    const transfers = Number(end.n) - Number(start.n);
    const writes = writesPerTransfer(before, after, transfers);
    console.log(`${transfers} transfers at ${rate}/s: p50 ${run.p50} ms, p99 ${run.p99} ms`);
    console.log(`rows written a transfer ${writes.rows.toFixed(2)}, index entries ≤ ${writes.indexEntries.toFixed(2)}:`);
    console.log(writesText(writes).split('; ').join('\n'));
    const { rows: rels } = await sql<{ node: string; relname: string }>`
      select pg_relation_filenode(oid)::text as node, relname from pg_class where pg_relation_filenode(oid) is not null`.execute(handle.db);
    const { rows: meta } = await sql<{ oid: string; dir: string; version: string }>`
      select (select oid::text from pg_database where datname = current_database()) as oid, current_setting('data_directory') as dir,
        current_setting('server_version_num') as version`.execute(handle.db);
    breakdown(
      Math.floor(Number(meta[0]!.version) / 10000),
      `${meta[0]!.dir}/pg_wal`,
      start.lsn,
      end.lsn,
      meta[0]!.oid,
      new Map(rels.map((r) => [r.node, r.relname])),
      transfers,
    );
  } finally {
    await server.stop();
  }
});
