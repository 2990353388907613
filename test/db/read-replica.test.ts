import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/client.js';
import { attachReplica } from '../../src/runtime.js';
import { call, clusterPort, startServer, waitExit, type ServerProcess } from '../server-process.js';

/**
 * DATABASE_READ_URL: lag-tolerant reads go to a streaming replica (a cluster and a pg_basebackup
 * standby of the test's own) while it is up and close enough; a replica paused behind the
 * primary, or stopped, sends them to the primary; /metrics shows its lag and whether it is used.
 */
const BIN = '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;
const enabled = Boolean(process.env.DATABASE_URL) && asRoot;

let dir = '';
let primaryPort = 0;
let replicaPort = 0;
let server: ServerProcess | undefined;

const asPostgres = (cmd: string, ...args: string[]) =>
  execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const ctl = (data: string, ...args: string[]) =>
  asPostgres(`${BIN}/pg_ctl`, '-D', join(dir, data), '-l', join(dir, `${data}.log`), '-w', ...args);

async function query<T = Record<string, unknown>>(port: number, text: string, db = 'app'): Promise<T[]> {
  const c = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/${db}` });
  await c.connect();
  try {
    return (await c.query(text)).rows as T[];
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  if (!enabled) return;
  dir = mkdtempSync('/tmp/fsapi-replica-');
  execFileSync('chown', ['postgres:', dir]);
  primaryPort = await clusterPort();
  replicaPort = await clusterPort();
  asPostgres(`${BIN}/initdb`, '-D', join(dir, 'primary'), '--auth=trust', '--no-sync', '-U', 'postgres');
  appendFileSync(
    join(dir, 'primary', 'postgresql.auto.conf'),
    `port = ${primaryPort}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nfsync = off\n`,
  );
  ctl('primary', 'start');
  await query(primaryPort, 'create database app', 'postgres');
  asPostgres(
    `${BIN}/pg_basebackup`,
    '-h',
    '127.0.0.1',
    '-p',
    String(primaryPort),
    '-U',
    'postgres',
    '-D',
    join(dir, 'replica'),
    '-R',
    '-X',
    'stream',
    '-c',
    'fast',
  );
  appendFileSync(join(dir, 'replica', 'postgresql.auto.conf'), `port = ${replicaPort}\n`);
  ctl('replica', 'start');
}, 60_000);

afterAll(async () => {
  if (!enabled) return;
  if (server && server.child.exitCode === null) server.child.kill('SIGKILL');
  for (const data of ['replica', 'primary'])
    spawnSync('runuser', ['-u', 'postgres', '--', `${BIN}/pg_ctl`, '-D', join(dir, data), '-m', 'immediate', 'stop'], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!enabled)('read replicas (DATABASE_READ_URL)', () => {
  it('serves lists from the replica over HTTP and shows its lag in /metrics', async () => {
    const readUrl = `postgres://postgres@127.0.0.1:${replicaPort}/app?target_session_attrs=standby`;
    server = await startServer({
      DATABASE_URL: `postgres://postgres@127.0.0.1:${primaryPort}/app`,
      DATABASE_READ_URL: readUrl,
      DEMO_TENANT: 'true',
      DB_POOL_SIZE: '4',
    });
    const { base, demoKey: key } = server;
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain(`fsapi_db_read_replica_in_use{host="127.0.0.1:${replicaPort}"} 1`);
    expect(metrics).toMatch(new RegExp(`fsapi_db_read_replica_lag_seconds\\{host="127.0.0.1:${replicaPort}"\\} [0-9.]+`));
    expect((await call(base, 'GET', '/v1/transactions', key)).status).toBe(200);
    expect((await call(base, 'GET', '/v1/customers', key)).status).toBe(200);
    server.child.kill('SIGTERM');
    await waitExit(server, 15_000);
  }, 180_000);

  it('a replica too far behind, or down, sends the reads to the primary', async () => {
    const handle = openPostgres(`postgres://postgres@127.0.0.1:${primaryPort}/app`, 2);
    const replica = await attachReplica(handle, {
      DATABASE_READ_URL: `postgres://postgres@127.0.0.1:${replicaPort}/app?target_session_attrs=standby`,
      DB_POOL_SIZE: 2,
      DB_READ_MAX_LAG_SECONDS: 1,
    });
    const readsFromStandby = async () => (await sql<{ r: boolean }>`select pg_is_in_recovery() as r`.execute(handle.reads!())).rows[0]!.r;
    try {
      expect(replica.inUse).toBe(true);
      expect(await readsFromStandby()).toBe(true);

      // Replay paused while the primary commits: the replica falls behind by the clock.
      await query(replicaPort, 'select pg_wal_replay_pause()');
      await query(primaryPort, 'create table lag_probe (id int)');
      await sleep(1500);
      await query(primaryPort, 'insert into lag_probe values (1)');
      await sleep(200);
      await replica.probe();
      expect(replica.lagSeconds).toBeGreaterThan(1);
      expect(replica.inUse).toBe(false);
      expect(await readsFromStandby()).toBe(false);

      await query(replicaPort, 'select pg_wal_replay_resume()');
      await sleep(300);
      await replica.probe();
      expect(replica.inUse).toBe(true);
      expect(await readsFromStandby()).toBe(true);

      ctl('replica', '-m', 'immediate', 'stop');
      await replica.probe();
      expect(replica.lagSeconds).toBeNull();
      expect(await readsFromStandby()).toBe(false);
    } finally {
      await handle.close();
    }
  }, 60_000);
});
