import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, runCli, scratchDatabase, startServer, waitExit } from '../server-process.js';

/**
 * Issue #15: two processes opened the same embedded (PGlite) data directory with no lock; the
 * operator CLI's `tenant create` run while the server ran printed keys for a business the
 * server never saw, lost at the next restart. Now the directory has an exclusive lock: a second
 * process fails with an error naming the holder, and the CLI refuses (exit 1, nothing printed
 * as done) with instructions instead of reporting work that is not durable.
 */
describe.skipIf(Boolean(process.env.DATABASE_URL))('embedded data directory lock', () => {
  it('a second server or the CLI on a data dir in use fails naming the holder; a stale lock after kill -9 is taken over', async () => {
    const scratch = await scratchDatabase();
    const env = { ...scratch.env, DEMO_TENANT: 'true' };
    let server = await startServer(env);
    try {
      const pid = server.child.pid!;
      const lock = JSON.parse(readFileSync(join(scratch.env.DATA_DIR!, 'pglite.lock'), 'utf8'));
      expect(lock.pid).toBe(pid);

      // A second server on the same directory does not start.
      const second = await startServer(env).then(
        (p) => {
          p.child.kill('SIGKILL');
          return 'started';
        },
        (err: Error) => err.message,
      );
      expect(second).toContain(`in use by process ${pid}`);

      // The CLI refuses instead of writing where the server cannot see it.
      const cli = runCli(['tenant', 'create', '--name', 'While Running', '--json'], env);
      expect(cli.status).toBe(1);
      expect(cli.stdout).toBe('');
      expect(cli.stderr).toContain(`process ${pid}`);
      expect(cli.stderr).toContain('Stop the server');

      // Stopped, the directory is free: the CLI works and the server sees what it made.
      server.child.kill('SIGTERM');
      expect((await waitExit(server, 20_000)).killed).toBe(false);
      const made = runCli(['tenant', 'create', '--name', 'Acme Ltd', '--json'], env);
      expect(made.status, made.stderr).toBe(0);
      const tenant = JSON.parse(made.stdout);
      server = await startServer(env);
      expect((await call(server.base, 'GET', '/v1/customers', tenant.sandbox.secret_key)).status).toBe(200);

      // kill -9 leaves the lock file behind with a dead PID: the next process takes it over.
      server.child.kill('SIGKILL');
      await server.exited;
      expect(JSON.parse(readFileSync(join(scratch.env.DATA_DIR!, 'pglite.lock'), 'utf8')).pid).toBe(server.child.pid);
      server = await startServer(env);
      expect((await call(server.base, 'GET', '/v1/customers', tenant.sandbox.secret_key)).status).toBe(200);
    } finally {
      server.child.kill('SIGTERM');
      await waitExit(server, 20_000);
      await scratch.dispose();
    }
  }, 400_000);
});
