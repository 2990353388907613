import { describe, expect, it } from 'vitest';
import { scratchDatabase, startServer, waitExit } from '../server-process.js';

/**
 * A server whose parent went away (its stdout and stderr pipes closed: a log collector that dies
 * is a normal fault) must keep answering and still stop on SIGTERM. Writing a log line to a
 * closed pipe fails with EPIPE; that must never stop the service or its shutdown.
 */
describe('closed standard output and error', () => {
  it('keeps serving under load and exits on SIGTERM', async () => {
    const scratch = await scratchDatabase();
    const server = await startServer({ ...scratch.env, LOG_LEVEL: 'info' });
    try {
      const get = (path: string) => fetch(`${server.base}${path}`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status);
      // Under load: requests in flight (each logging an access line) while both pipes close.
      const load = Array.from({ length: 100 }, (_, i) => get(`/healthz?before=${i}`));
      server.child.stdout!.destroy();
      server.child.stderr!.destroy();
      expect((await Promise.all(load)).every((s) => s === 200)).toBe(true);
      for (let round = 0; round < 20; round++) {
        const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => get(`/healthz?after=${round}-${i}`)));
        expect(answers.every((s) => s === 200)).toBe(true);
      }
      // Errors are logged to the closed pipes too (a 404 and a 401 log at warn or error).
      expect(await get('/v1/customers')).toBe(401);
      expect(await get('/nope')).toBe(404);
      expect(await get('/readyz')).toBe(200);
      expect(server.child.exitCode).toBeNull();
      server.child.kill('SIGTERM');
      expect(await waitExit(server, 15_000)).toEqual({ code: 0, killed: false });
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await scratch.dispose();
    }
  }, 120_000);

  it('keeps serving while nobody reads the pipes, and exits on SIGTERM with them still full', async () => {
    const scratch = await scratchDatabase();
    const server = await startServer({ ...scratch.env, LOG_LEVEL: 'info' });
    try {
      const get = (path: string) => fetch(`${server.base}${path}`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status);
      server.child.stdout!.pause();
      server.child.stderr!.pause();
      // About 700 KiB of access lines: far more than the pipes and the log buffer hold.
      for (let round = 0; round < 60; round++) {
        const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => get(`/healthz?full=${round}-${i}`)));
        expect(answers.every((s) => s === 200)).toBe(true);
      }
      expect(await get('/nope')).toBe(404);
      server.child.kill('SIGTERM');
      expect(await waitExit(server, 15_000)).toMatchObject({ killed: false });
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await scratch.dispose();
    }
  }, 120_000);
});
