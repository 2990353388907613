/**
 * Server CPU per account read and per /healthz of two or more builds side by side, on one
 * database, their loads taking turns every few seconds, so that a shared machine's load drifts
 * over all of them alike (runs of `npm run bench` one after the other moved by 2× here):
 *
 *   BENCH_DATABASE_URL=... npx tsx bench/ab.ts [--transfers] <rounds> name=/path/to/worktree[:ENV=value] ...
 *   e.g. npx tsx bench/ab.ts 9 main=/work/wt/base branch=. nolog=.:REQUEST_LOG=off
 *
 * Each path must hold a build (`npm run build` there: dist/). Each round runs, for every server
 * in turn (the order rotating), 4 s of GET /v1/accounts/{id} and 4 s of GET /healthz at 32
 * connections, and reads the server's CPU time from /proc around each.
 *
 * With --transfers a turn is 4 s of POST /v1/transfers at 32 connections instead, between random
 * pairs of 100 funded accounts (the spread load's), and it reads the server's CPU and
 * PostgreSQL's (the bench cluster's background processes and this database's backends, all
 * builds' pools included: only the build whose turn it is sends anything) around it.
 */
import { randomBytes } from 'node:crypto';
import { openPostgres } from '../src/db/client.js';
import { accountReadLoad, healthzLoad, transferLoad } from './load.js';
import {
  admin,
  anyOf,
  fundedAccounts,
  prepareDatabase,
  randomPairs,
  scopePostgresCpu,
  startBuild,
  trackPostgresCpu,
  type Server,
  withDatabase,
} from './server.js';

interface Build {
  name: string;
  server: Server;
  totals: { readMs: number; reads: number; healthzMs: number; healthz: number; transferMs: number; postgresMs: number; transfers: number };
}

async function start(spec: string, url: string): Promise<Build> {
  return {
    ...(await startBuild(spec, url, 24)),
    totals: { readMs: 0, reads: 0, healthzMs: 0, healthz: 0, transferMs: 0, postgresMs: 0, transfers: 0 },
  };
}

/** One build's turn: its reads, then its /healthz, with the CPU each cost. */
async function turn(b: Build, key: string, pick: () => string): Promise<string> {
  let at = b.server.cpuMs();
  const reads = await accountReadLoad({ base: b.server.base, key, seconds: 4, connections: 32 }, pick);
  const readMs = b.server.cpuMs() - at;
  at = b.server.cpuMs();
  const healthz = await healthzLoad({ base: b.server.base, key, seconds: 4, connections: 32 });
  const healthzMs = b.server.cpuMs() - at;
  b.totals.readMs += readMs;
  b.totals.reads += reads.ok;
  b.totals.healthzMs += healthzMs;
  b.totals.healthz += healthz.ok;
  const [read, bare] = [readMs / reads.ok, healthzMs / healthz.ok];
  return `${b.name}: read ${read.toFixed(3)} ms (${reads.ok}), /healthz ${bare.toFixed(3)} ms (${healthz.ok}), ${(read / bare).toFixed(2)}×`;
}

/** One build's turn of transfers: the server's CPU and PostgreSQL's per transfer. */
async function transferTurn(b: Build, key: string, pick: () => [string, string]): Promise<string> {
  // Sampled through the turn: the other builds' pools close idle connections meanwhile, and a
  // backend that ends between two readings would take its whole life's CPU off the difference.
  const postgres = trackPostgresCpu();
  const at = b.server.cpuMs();
  const transfers = await transferLoad({ base: b.server.base, key, seconds: 4, connections: 32 }, pick);
  const [serverMs, postgresMs] = [b.server.cpuMs() - at, postgres()];
  b.totals.transferMs += serverMs;
  b.totals.postgresMs += postgresMs;
  b.totals.transfers += transfers.ok;
  const [server, pg] = [serverMs / transfers.ok, postgresMs / transfers.ok];
  return `${b.name}: transfer: server ${server.toFixed(3)} ms, PostgreSQL ${pg.toFixed(3)} ms (${transfers.ok}, failed ${transfers.failures}), ${(server / pg).toFixed(2)}×`;
}

const adminUrl = process.env.BENCH_DATABASE_URL;
const args = process.argv.slice(2);
const transfersMode = args[0] === '--transfers';
const [roundsArg, ...specs] = transfersMode ? args.slice(1) : args;
if (!adminUrl || specs.length === 0) {
  console.error('usage: BENCH_DATABASE_URL=... tsx bench/ab.ts [--transfers] <rounds> name=path[:ENV=value] ...');
  process.exit(2);
}
const database = `fsapi_ab_${randomBytes(4).toString('hex')}`;
await admin(adminUrl, (c) => c.query(`create database ${database}`));
const url = withDatabase(adminUrl, database);
try {
  const handle = openPostgres(url, 4);
  const { key } = await prepareDatabase(handle);
  await handle.close();
  const builds: Build[] = [];
  for (const spec of specs) builds.push(await start(spec, url));
  const ids = await fundedAccounts(builds[0]!.server.base, key, 100);
  const pick = () => anyOf(ids);
  const pairs = randomPairs(ids);
  await scopePostgresCpu(adminUrl, database);
  for (const b of builds) {
    if (transfersMode) await transferLoad({ base: b.server.base, key, seconds: 2, connections: 32 }, pairs);
    else await accountReadLoad({ base: b.server.base, key, seconds: 2, connections: 32 }, pick);
  }
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const b of [...builds.slice(round % builds.length), ...builds.slice(0, round % builds.length)]) {
      console.log(`round ${round} ${transfersMode ? await transferTurn(b, key, pairs) : await turn(b, key, pick)}`);
    }
  }
  for (const { name, totals: t } of builds) {
    if (transfersMode) {
      const [server, pg] = [t.transferMs / t.transfers, t.postgresMs / t.transfers];
      console.log(
        `${name}: server CPU per transfer ${server.toFixed(3)} ms, PostgreSQL's ${pg.toFixed(3)} ms, ${(server / pg).toFixed(2)}×`,
      );
      continue;
    }
    const [read, bare] = [t.readMs / t.reads, t.healthzMs / t.healthz];
    console.log(`${name}: server CPU per read ${read.toFixed(3)} ms, per /healthz ${bare.toFixed(3)} ms, ${(read / bare).toFixed(2)}×`);
  }
  await Promise.all(builds.map((b) => b.server.stop()));
  await new Promise((r) => setTimeout(r, 2000));
} finally {
  await admin(adminUrl, (c) => c.query(`drop database if exists ${database} with (force)`));
}
