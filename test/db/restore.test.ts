import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { call, clusterPort, runCli, startServer, waitExit, type ServerProcess } from '../server-process.js';

/**
 * Point-in-time restore with pgBackRest (Debian's pgbackrest): a cluster of the test's own with
 * WAL archiving, a full and an incremental backup, transfers before and after a noted time, then
 * scripts/restore.sh restores to that time into a new cluster: every transfer acknowledged before
 * it is there, none after, and `ledger reconcile` passes on the restored database.
 */
const BIN = '/usr/lib/postgresql/15/bin';
const hasBackrest = spawnSync('pgbackrest', ['version'], { stdio: 'ignore' }).status === 0;
const asRoot = process.getuid?.() === 0;
const enabled = Boolean(process.env.DATABASE_URL) && hasBackrest && asRoot;
if (process.env.DATABASE_URL && !enabled) console.warn('pgbackrest missing or not root: restore test skipped');

const ROOT = new URL('../..', import.meta.url).pathname;
let dir = '';
let port = 0;
let restoredPort = 0;
let server: ServerProcess | undefined;

function asPostgres(cmd: string, ...args: string[]): string {
  return execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}
const backrest = (...args: string[]) => asPostgres('pgbackrest', `--config=${dir}/pgbackrest.conf`, '--stanza=app', ...args);

async function query<T = Record<string, unknown>>(p: number, text: string, values: unknown[] = [], db = 'app'): Promise<T[]> {
  const c = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${p}/${db}` });
  await c.connect();
  try {
    return (await c.query(text, values)).rows as T[];
  } finally {
    await c.end();
  }
}

function pgUid(): { uid: number; gid: number } {
  const [, , uid, gid] = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'))!
    .split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

beforeAll(async () => {
  if (!enabled) return;
  dir = mkdtempSync('/tmp/fsapi-restore-');
  const { uid, gid } = pgUid();
  for (const sub of ['', 'repo', 'log', 'lock']) {
    mkdirSync(join(dir, sub), { recursive: true });
    chownSync(join(dir, sub), uid, gid);
  }
  port = await clusterPort();
  restoredPort = await clusterPort();
  // The configuration docs/operations.md describes, on this test's paths.
  writeFileSync(
    join(dir, 'pgbackrest.conf'),
    [
      '[global]',
      `repo1-path=${dir}/repo`,
      'repo1-retention-full=2',
      'start-fast=y',
      'compress-type=lz4',
      `log-path=${dir}/log`,
      `lock-path=${dir}/lock`,
      'log-level-console=warn',
      '',
      '[app]',
      `pg1-path=${dir}/src`,
      `pg1-port=${port}`,
      `pg1-socket-path=${dir}`,
      '',
    ].join('\n'),
  );
  chownSync(join(dir, 'pgbackrest.conf'), uid, gid);
  asPostgres(`${BIN}/initdb`, '-D', `${dir}/src`, '--auth=trust', '--no-sync', '-U', 'postgres');
  writeFileSync(
    join(dir, 'src', 'postgresql.auto.conf'),
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      'wal_level = replica',
      'archive_mode = on',
      `archive_command = 'pgbackrest --config=${dir}/pgbackrest.conf --stanza=app archive-push %p'`,
      'fsync = off',
      '',
    ].join('\n'),
  );
  asPostgres(`${BIN}/pg_ctl`, '-D', `${dir}/src`, '-l', `${dir}/src.log`, '-w', 'start');
  backrest('stanza-create');
  await query(port, 'create database app', [], 'postgres');
}, 60_000);

afterAll(async () => {
  if (!enabled) return;
  if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  for (const data of ['src', 'restored'])
    spawnSync('runuser', ['-u', 'postgres', '--', `${BIN}/pg_ctl`, '-D', `${dir}/${data}`, '-m', 'immediate', 'stop'], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!enabled)('point-in-time restore (pgBackRest)', () => {
  it('restores to a named time: every transfer acknowledged before it, none after, and the ledger reconciles', async () => {
    server = await startServer({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/app`, DEMO_TENANT: 'true', DB_POOL_SIZE: '4' });
    const { base, demoKey: key } = server;
    const post = async (path: string, body: unknown) => {
      const r = await call(base, 'POST', path, key, body, newId());
      expect([200, 201], JSON.stringify(r.body)).toContain(r.status);
      return r.body.data as { id: string };
    };
    const source = (await post('/v1/accounts', { currency: 'NGN', label: 'source' })).id;
    const sink = (await post('/v1/accounts', { currency: 'NGN', label: 'sink' })).id;
    await post(`/v1/simulations/accounts/${source}/fund`, { amount: '1000.00' });
    const transfer = async () =>
      (
        await post('/v1/transfer', {
          source: { source_type: 'internal_account', id: source },
          destination: { destination_type: 'internal_account', id: sink },
          amount: '1.00',
        })
      ).id;

    backrest('backup', '--type=full');
    const before: string[] = [];
    for (let i = 0; i < 10; i++) before.push(await transfer());
    backrest('backup', '--type=incr');
    for (let i = 0; i < 10; i++) before.push(await transfer());
    const [noted] = await query<{ at: string }>(
      port,
      "select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' as at",
    );
    const at = noted!.at;
    await new Promise((r) => setTimeout(r, 1100));
    const after: string[] = [];
    for (let i = 0; i < 10; i++) after.push(await transfer());
    // The WAL holding the later commits is archived, so recovery sees where the target ends.
    await query(port, 'select pg_switch_wal()');
    backrest('check');
    server.child.kill('SIGTERM');
    await waitExit(server, 15_000);

    const restore = spawnSync(
      join(ROOT, 'scripts/restore.sh'),
      [
        '--stanza',
        'app',
        '--target',
        at,
        '--pgdata',
        `${dir}/restored`,
        '--port',
        String(restoredPort),
        '--config',
        `${dir}/pgbackrest.conf`,
      ],
      { encoding: 'utf8' },
    );
    expect(restore.status, restore.stdout + restore.stderr).toBe(0);

    const rows = await query<{ id: string }>(restoredPort, 'select id::text from transfers where id = any($1::uuid[])', [
      [...before, ...after],
    ]);
    const present = new Set(rows.map((r) => r.id));
    expect(before.filter((id) => !present.has(id))).toEqual([]); // every one acknowledged before the time
    expect(after.filter((id) => present.has(id))).toEqual([]); // none after it
    const reconcile = runCli(['ledger', 'reconcile'], { DATABASE_URL: `postgres://postgres@127.0.0.1:${restoredPort}/app` });
    expect(reconcile.status, reconcile.stdout + reconcile.stderr).toBe(0);
    const sinkBalance = await query<{ n: string }>(
      restoredPort,
      'select count(*)::text as n from transfers where source_id = $1 and destination_id = $2',
      [source, sink],
    );
    expect(Number(sinkBalance[0]!.n)).toBe(before.length);
  }, 120_000);
});
