import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Fastify from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/client.js';
import { registerErrorHandling } from '../../src/http/envelope.js';
import { clusterPort } from '../server-process.js';

/**
 * A write that lands on a server that stopped accepting writes (25006: what a demoted primary
 * answers) is a 503, and the pool finds the writable host by itself: two clusters of the test's
 * own in one multi-host URL; the first turns read-only under the pool's open connections.
 */
const BIN = '/usr/lib/postgresql/15/bin';
const asRoot = process.getuid?.() === 0;
const enabled = Boolean(process.env.DATABASE_URL) && asRoot;

let dir = '';
const ports: number[] = [];
const asPostgres = (cmd: string, ...args: string[]) =>
  execFileSync('runuser', ['-u', 'postgres', '--', cmd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

async function query(port: number, text: string, db = 'app') {
  const c = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/${db}` });
  await c.connect();
  try {
    return (await c.query(text)).rows;
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  if (!enabled) return;
  dir = mkdtempSync('/tmp/fsapi-not-primary-');
  execFileSync('chown', ['postgres:', dir]);
  for (const name of ['x', 'y']) {
    const port = await clusterPort();
    ports.push(port);
    asPostgres(`${BIN}/initdb`, '-D', join(dir, name), '--auth=trust', '--no-sync', '-U', 'postgres');
    appendFileSync(
      join(dir, name, 'postgresql.auto.conf'),
      `port = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nfsync = off\n`,
    );
    asPostgres(`${BIN}/pg_ctl`, '-D', join(dir, name), '-l', join(dir, `${name}.log`), '-w', 'start');
    await query(port, 'create database app', 'postgres');
    await query(port, 'create table probe (id serial primary key, host text)');
  }
}, 60_000);

afterAll(() => {
  if (!enabled) return;
  for (const name of ['x', 'y']) {
    spawnSync('runuser', ['-u', 'postgres', '--', `${BIN}/pg_ctl`, '-D', join(dir, name), '-m', 'immediate', 'stop'], { stdio: 'ignore' });
  }
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!enabled)('25006 on the host in use', () => {
  it('answers 503 with Retry-After, then the pool moves to the writable host', async () => {
    const [x, y] = ports as [number, number];
    const handle = openPostgres(`postgres://postgres@127.0.0.1:${x},127.0.0.1:${y}/app?target_session_attrs=read-write`, 3);
    const app = Fastify({ logger: false });
    registerErrorHandling(app);
    app.post('/write', async () => {
      const { rows } = await handle.db
        .transaction()
        .execute((trx) =>
          sql<{ port: number }>`insert into probe (host) values ('w') returning current_setting('port')::int as port`.execute(trx),
        );
      return rows[0];
    });
    await app.ready();
    try {
      // Every connection of the pool open on x.
      const first = await Promise.all([1, 2, 3].map(() => app.inject({ method: 'POST', url: '/write' })));
      expect(first.map((r) => r.json().port)).toEqual([x, x, x]);
      expect(handle.primaryInUse?.()).toBe(`127.0.0.1:${x}`);

      // x stops accepting writes; the pool's open sessions see it on their next transaction.
      await query(x, 'alter system set default_transaction_read_only = on', 'postgres');
      await query(x, 'select pg_reload_conf()', 'postgres');
      await new Promise((r) => setTimeout(r, 300));

      const refused = await app.inject({ method: 'POST', url: '/write' });
      expect(refused.statusCode, refused.body).toBe(503);
      expect(refused.headers['retry-after']).toBeDefined();
      // The retry is not sent to x again: every pooled connection is checked, and y is found.
      const retried = await Promise.all([1, 2, 3].map(() => app.inject({ method: 'POST', url: '/write' })));
      expect(retried.map((r) => r.statusCode)).toEqual([200, 200, 200]);
      expect(retried.map((r) => r.json().port)).toEqual([y, y, y]);
      expect(handle.primaryInUse?.()).toBe(`127.0.0.1:${y}`);
    } finally {
      await app.close();
      await handle.close();
    }
  }, 30_000);
});
