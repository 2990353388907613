/**
 * Server CPU, allocation and values sent per internal transfer of two or more builds side by
 * side, on one database, their loads taking turns (the order rotating each round), so that a
 * shared machine's load drifts over all of them alike:
 *
 *   BENCH_DATABASE_URL=... npx tsx bench/xfer-ab.ts [rounds] name=/path/to/worktree[:ENV=value] ...
 *   e.g. nice npx tsx bench/xfer-ab.ts 6 main=/work/wt/base branch=.
 *
 * Each path must hold a build (`npm run build` there: dist/). Each round runs, for every server in
 * turn, 4 s of POST /v1/transfers between 100 accounts at 32 connections (server CPU per transfer
 * from /proc), then exactly 1,600 transfers at 16 connections inside an allocation window of
 * bench/alloc-sampler.mjs (preloaded into every server): the bytes V8's sampling heap profiler
 * saw allocated (freed objects included), and the statements bound and values sent to
 * PostgreSQL, per transfer. At the end, each build's top allocating frames over all its windows.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { openPostgres } from '../src/db/client.js';
import { transferLoad, transferRequest } from './load.js';
import { admin, fundedAccounts, prepareDatabase, randomPairs, startServer, withDatabase, type Server } from './server.js';

const SAMPLER = join(import.meta.dirname, 'alloc-sampler.mjs');
const WINDOW_TRANSFERS = 1600;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

interface Build {
  name: string;
  server: Server;
  sampleFile: string;
  cpu: number[];
  bytes: number[];
  values: number[];
  binds: number[];
  sites: Map<string, number>;
  windowTransfers: number;
}

async function start(name: string, spec: string, url: string): Promise<Build> {
  const [dir, ...settings] = spec.split(':');
  const dataDir = mkdtempSync(join(tmpdir(), 'fsapi-xfer-ab-'));
  const sampleFile = join(dataDir, 'alloc.json');
  const server = await startServer({
    root: resolve(dir!),
    dbUrl: url,
    dataDir,
    poolSize: 24,
    nodeArgs: ['--import', SAMPLER],
    env: { ALLOC_SAMPLE_FILE: sampleFile, ...Object.fromEntries(settings.map((s) => s.split('='))) },
  });
  return { name, server, sampleFile, cpu: [], bytes: [], values: [], binds: [], sites: new Map(), windowTransfers: 0 };
}

/** Exactly `amount` transfers at `connections`, closed loop; the number answered 2xx. */
async function fixedTransfers(base: string, key: string, pick: () => [string, string], amount: number, connections: number) {
  const result = await autocannon({
    url: base,
    connections,
    amount,
    requests: [transferRequest(key, pick)],
  });
  return result['2xx'];
}

function addSites(node: ProfileNode, into: Map<string, number>) {
  if (node.selfSize > 0) {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url.replace(/^file:\/\/\/work\/wt\/[^/]+\//, '').replace(/^.*node_modules\//, '');
    const site = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
    into.set(site, (into.get(site) ?? 0) + node.selfSize);
  }
  for (const c of node.children) addSites(c, into);
}

async function allocWindow(b: Build, key: string, pick: () => [string, string]) {
  rmSync(b.sampleFile, { force: true });
  b.server.process.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, 300));
  const ok = await fixedTransfers(b.server.base, key, pick, WINDOW_TRANSFERS, 16);
  b.server.process.kill('SIGUSR2');
  for (let i = 0; i < 200 && !existsSync(b.sampleFile); i++) await new Promise((r) => setTimeout(r, 100));
  // Kept for a closer look (the callers of a frame): XFER_AB_KEEP=dir.
  if (process.env.XFER_AB_KEEP) copyFileSync(b.sampleFile, join(process.env.XFER_AB_KEEP, `${b.name}-${b.bytes.length}.json`));
  const { profile, binds, values } = JSON.parse(readFileSync(b.sampleFile, 'utf8')) as {
    profile: { head: ProfileNode };
    binds: number;
    values: number;
  };
  const sites = new Map<string, number>();
  addSites(profile.head, sites);
  const total = [...sites.values()].reduce((a, x) => a + x, 0);
  for (const [s, n] of sites) b.sites.set(s, (b.sites.get(s) ?? 0) + n);
  b.windowTransfers += ok;
  b.bytes.push(total / ok);
  b.values.push(values / ok);
  b.binds.push(binds / ok);
  return { ok, total, binds, values };
}

async function turn(b: Build, key: string, pick: () => [string, string]): Promise<string> {
  const at = b.server.cpuMs();
  const load = await transferLoad({ base: b.server.base, key, seconds: 4, connections: 32 }, pick);
  const ms = (b.server.cpuMs() - at) / load.ok;
  b.cpu.push(ms);
  const w = await allocWindow(b, key, pick);
  return (
    `${b.name}: CPU ${ms.toFixed(3)} ms a transfer (${load.ok}, ${load.failures}); ` +
    `window ${w.ok} transfers: ${(w.total / w.ok / 1024).toFixed(1)} KiB, ${(w.binds / w.ok).toFixed(2)} statements, ` +
    `${(w.values / w.ok).toFixed(1)} values a transfer`
  );
}

const range = (xs: number[], digits: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[0]!.toFixed(digits)}–${s[s.length - 1]!.toFixed(digits)} (median ${s[Math.floor(s.length / 2)]!.toFixed(digits)})`;
};

const adminUrl = process.env.BENCH_DATABASE_URL;
const [roundsArg, ...specs] = process.argv.slice(2);
if (!adminUrl || specs.length === 0) {
  console.error('usage: BENCH_DATABASE_URL=... tsx bench/xfer-ab.ts <rounds> name=path[:ENV=value] ...');
  process.exit(2);
}
const database = `fsapi_xab_${randomBytes(4).toString('hex')}`;
await admin(adminUrl, (c) => c.query(`create database ${database}`));
const url = withDatabase(adminUrl, database);
const builds: Build[] = [];
try {
  const handle = openPostgres(url, 4);
  const { key } = await prepareDatabase(handle);
  await handle.close();
  for (const spec of specs) builds.push(await start(spec.split('=')[0]!, spec.slice(spec.indexOf('=') + 1), url));
  const pick = randomPairs(await fundedAccounts(builds[0]!.server.base, key, 100));
  for (const b of builds) await transferLoad({ base: b.server.base, key, seconds: 3, connections: 32 }, pick); // warm up
  for (let round = 0; round < Number(roundsArg); round++) {
    for (const b of [...builds.slice(round % builds.length), ...builds.slice(0, round % builds.length)]) {
      console.log(`round ${round} ${await turn(b, key, pick)}`);
    }
  }
  for (const b of builds) {
    console.log(
      `${b.name}: server CPU per transfer ${range(b.cpu, 3)} ms; allocated ${range(
        b.bytes.map((x) => x / 1024),
        1,
      )} KiB; statements ${range(b.binds, 2)}; values ${range(b.values, 1)} a transfer`,
    );
  }
  for (const b of builds) {
    console.log(`\n${b.name}: top allocating frames, bytes a transfer (all windows)`);
    const top = [...b.sites].sort((x, y) => y[1] - x[1]).slice(0, Number(process.env.XFER_AB_TOP ?? 40));
    for (const [site, bytes] of top) console.log(`${(bytes / b.windowTransfers).toFixed(0).padStart(8)}  ${site}`);
  }
} finally {
  for (const b of builds) {
    await b.server.stop();
    rmSync(b.server.dataDir, { recursive: true, force: true });
  }
  await admin(adminUrl, (c) => c.query(`drop database if exists ${database} with (force)`));
}
