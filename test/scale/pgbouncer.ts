import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './cluster.js';

const BINARY = '/usr/sbin/pgbouncer';

export const pgbouncerInstalled = () => existsSync(BINARY);

/**
 * Debian's PgBouncer in transaction mode on a port of its own, in front of the PostgreSQL of
 * `upstreamUrl`, with its config in a temp dir. It refuses to run as root, so as root it drops
 * to the `postgres` user (-u). Returns a URL for the same database through the bouncer.
 */
export async function startPgBouncer(upstreamUrl: string, poolSize = 20) {
  const upstream = new URL(upstreamUrl);
  const user = decodeURIComponent(upstream.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'fsapi-pgbouncer-'));
  chmodSync(dir, 0o755);
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'userlist.txt');
  writeFileSync(users, `"${user}" ""\n`, { mode: 0o644 });
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir =`,
      'auth_type = trust',
      `auth_file = ${users}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits,options',
      'server_reset_query =',
      'admin_users =',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0;
  const child = spawn(BINARY, [...(asRoot ? ['-u', 'postgres'] : []), ini], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr.on('data', (c: Buffer) => output.push(c.toString()));
  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`pgbouncer did not start:\n${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = new URL(upstreamUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    port,
    output,
    /** The same database through PgBouncer. */
    urlFor(database: string) {
      const u = new URL(url);
      u.pathname = `/${database}`;
      return u.toString();
    },
    async stop() {
      child.kill('SIGINT');
      await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
