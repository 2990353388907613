import type { Row } from './suite.js';
import type { Tails } from './tails.js';

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

interface CpuPer {
  server: number;
  postgres: number;
  load: number;
}

/** Our p99 at a fixed rate against PostgreSQL's own (TPC-B at the same rate, in turns with ours), with the floor's ratio beside it. */
export function tailRatio(what: string, tails: Tails): Row {
  const { ours, pgbench, floor, rounds } = tails;
  const r = ours.p99 / pgbench.p99;
  return {
    name: `p99 at ${what} ÷ PostgreSQL's p99 at the same rate (${rounds} turns each, bench/tails.ts)`,
    measured:
      `p50 ${ours.p50} ms, p99 ${ours.p99} ms (${fmt(ours.ok)} transfers${ours.failed > 0 ? `, ${ours.failed} failed` : ''})` +
      (ours.sendLagP99 === undefined ? '' : `; the load generator sent p99 ${ours.sendLagP99} ms late`),
    reference:
      `${pgbench.command} (TPC-B -s 10): p50 ${pgbench.p50} ms, p99 ${pgbench.p99} ms (${fmt(pgbench.count)} transactions); ` +
      `the floor, that transaction behind a bare node:http server (bench/floor-server.ts), same load: p50 ${floor.p50} ms, ` +
      `p99 ${floor.p99} ms${floor.failed > 0 ? `, ${floor.failed} failed` : ''}, ${fmt(floor.p99 / pgbench.p99, 2)}× pgbench's p99`,
    ratio: r,
    target: '≤ 1.5×',
    met: r <= 1.5 && ours.failed === 0,
  };
}

/** The server's CPU per transfer against PostgreSQL's for the same transfers. */
export function cpuRatioRow(c: CpuPer): Row {
  const r = c.server / c.postgres;
  return {
    name: "server CPU per transfer ÷ PostgreSQL's (the spread load)",
    measured: `server ${fmt(c.server, 3)} ms`,
    reference: `PostgreSQL ${fmt(c.postgres, 3)} ms (the bench's databases and its cluster's WAL writer, checkpointer, background writer)`,
    ratio: r,
    target: '≤ 1.0×',
    met: r <= 1,
  };
}

/** The server's CPU per account read against its CPU per /healthz request. */
export function healthzRatioRow(read: CpuPer, reads: number, healthz: CpuPer, requests: number): Row {
  const r = read.server / healthz.server;
  return {
    name: 'server CPU per GET /v1/accounts/{id} ÷ per GET /healthz (in turns)',
    measured: `${fmt(read.server, 3)} ms a read (${fmt(reads)} reads; PostgreSQL ${fmt(read.postgres, 3)} ms)`,
    reference: `${fmt(healthz.server, 3)} ms a /healthz request (${fmt(requests)} requests)`,
    ratio: r,
    target: '≤ 2.0×',
    met: r <= 2,
  };
}

/** WAL per transfer (server-wide, over the spread load) and the rows and index entries behind it. */
export function walRow(
  wal: { bytes: number; records: number; transfers: number },
  writes: { rows: number; indexEntries: number; text: string } | undefined,
): Row {
  const kib = wal.bytes / 1024;
  const rows = writes ? `; rows written ${fmt(writes.rows, 1)}, index entries ≤ ${fmt(writes.indexEntries, 1)}: ${writes.text}` : '';
  return {
    name: 'WAL written per transfer (the spread load, API only; WAL is server-wide)',
    measured: `${fmt(kib, 2)} KiB, ${fmt(wal.records, 1)} records (${fmt(wal.transfers)} transfers)${rows}`,
    reference: '',
    target: '≤ 6 KiB',
    met: kib <= 6,
  };
}
