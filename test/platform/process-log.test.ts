import { describe, expect, it } from 'vitest';
import { scratchDatabase, startServer, waitExit } from '../server-process.js';

/**
 * The server's process log (one access line per request) goes to standard output. When nothing
 * takes it (a log collector that hangs, a pipe nobody reads), the server must keep serving and
 * keep its memory bounded: pino's default destination kept every line, retrying every 100 ms,
 * so the process grew with every request, without a bound. lib/log-destination.ts holds up to
 * LOG_BUFFER_BYTES and drops (and counts) the rest; lines flow again once output is read.
 */
describe('the process log when standard output stalls', () => {
  it('keeps serving, drops and counts lines beyond its buffer, and writes again once read', async () => {
    const scratch = await scratchDatabase();
    const server = await startServer({ ...scratch.env, LOG_LEVEL: 'info', LOG_BUFFER_BYTES: '65536' });
    try {
      // Stop reading the server's output: our stream's buffer fills, then the pipe's (64 KiB).
      server.child.stdout!.pause();
      const requests = 3000; // about 700 KiB of access lines: far more than the buffers hold
      for (let i = 0; i < requests; i += 50) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, () => fetch(`${server.base}/healthz`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.status)),
        );
        expect(answers.every((status) => status === 200)).toBe(true);
      }
      const metrics = await (await fetch(`${server.base}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
      const dropped = Number(/^fsapi_log_lines_dropped_total (\d+)/m.exec(metrics)?.[1] ?? Number.NaN);
      // Lines held: our stream's buffer + the pipe + LOG_BUFFER_BYTES, about 200 KiB in all.
      expect(dropped).toBeGreaterThan(requests / 2);
      expect(dropped).toBeLessThan(requests);

      // Output read again: what was held drains, and new requests' lines follow (the first ones
      // may still find the buffer full and be dropped: ask until one is written).
      server.child.stdout!.resume();
      let n = 0;
      await expect
        .poll(
          async () => {
            const marker = `/healthz?after-stall=${++n}`;
            expect((await fetch(`${server.base}${marker}`)).status).toBe(200);
            await new Promise((resolve) => setTimeout(resolve, 300)); // the destination writes every 200 ms
            return server.output().includes(`${marker}"`);
          },
          { timeout: 10_000, interval: 0 },
        )
        .toBe(true);
    } finally {
      server.child.kill('SIGTERM');
      await waitExit(server, 15_000);
      await scratch.dispose();
    }
  }, 120_000);
});

/** Lines wait in the destination's buffer (up to 4 KiB or 200 ms): a graceful stop must not lose them. */
describe('the process log when the server stops', () => {
  it('writes every buffered line', async () => {
    const scratch = await scratchDatabase();
    const server = await startServer({ ...scratch.env, LOG_LEVEL: 'info' });
    try {
      // Fewer than 4 KiB of lines: they wait for the destination's next tick, or for the exit.
      // Not the time in decimal: 13 digits are redacted from logged URLs when they pass Luhn's
      // check (a card number), and one timestamp in ten does.
      const marker = `/healthz?before-stop=${Date.now().toString(36)}`;
      expect((await fetch(`${server.base}${marker}`)).status).toBe(200);
      server.child.kill('SIGTERM');
      expect(await waitExit(server, 15_000)).toEqual({ code: 0, killed: false });
      const lines = server.output().split('\n');
      expect(
        lines.some((line) => line.includes(`${marker}"`) && line.includes('request completed')),
        server.output(),
      ).toBe(true);
      expect(
        lines.some((line) => line.includes('"msg":"stopped"')),
        server.output(),
      ).toBe(true);
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await scratch.dispose();
    }
  }, 120_000);
});
