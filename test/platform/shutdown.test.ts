import { createServer, type IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { call, scratchDatabase, startServer, waitExit } from '../server-process.js';

/**
 * Issue #15: on the embedded database, SIGTERM sometimes closed the port but left the process
 * alive (5 of about 12 stops, once for 8 minutes): shutdown waited for the workers' current tick,
 * and a webhook delivery tick waits for every receiver of its batch (15 s each when they hang).
 * The real server process is started and stopped many times on this run's database, with
 * requests in flight and a webhook receiver that never answers: each stop must end the process
 * by itself, exit code 0, well within the 10 s shutdown deadline, and every request accepted
 * before the signal is answered (drained), never cut off with a 5xx.
 */
const CYCLES = Number(process.env.SHUTDOWN_TEST_CYCLES ?? 8);
/** Cycles that stop while a webhook delivery hangs (each costs the workers' 2 s drain bound). */
const withHangingDelivery = (cycle: number) => cycle % 4 === 0;

describe('shutdown always ends', () => {
  it(`SIGTERM ends the real server ${CYCLES} times out of ${CYCLES}, draining requests in flight`, async () => {
    const scratch = await scratchDatabase();
    const env = { ...scratch.env, DEMO_TENANT: 'true' };
    const outcomes: string[] = [];
    const stopTimes: number[] = [];
    let key = '';
    // A webhook receiver that accepts every delivery and never answers.
    const hanging: IncomingMessage[] = [];
    const receiver = createServer((req) => void hanging.push(req));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    let deliveriesHangingAtStop = 0;
    try {
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const server = await startServer(env);
        if (!key) {
          key = server.demoKey;
          const hook = await call(server.base, 'POST', '/v1/webhooks/endpoints', key, { url: hookUrl }, newId());
          expect([200, 201], JSON.stringify(hook.body)).toContain(hook.status);
        }
        if (withHangingDelivery(cycle)) {
          // An event to deliver, and its delivery stuck in the receiver when the signal arrives.
          const before = hanging.length;
          await call(server.base, 'POST', '/v1/accounts', key, { currency: 'NGN', label: `hook${cycle}` }, newId());
          for (let waited = 0; hanging.length === before && waited < 8000; waited += 50) await new Promise((r) => setTimeout(r, 50));
          if (hanging.length > before) deliveriesHangingAtStop++;
        }
        // Requests in flight when the signal arrives (writes and reads), workers mid-tick.
        const inFlight = Array.from({ length: 6 }, (_, i) =>
          i % 2 === 0
            ? call(server.base, 'POST', '/v1/accounts', key, { currency: 'NGN', label: `c${cycle}` }, newId())
            : call(server.base, 'GET', '/v1/accounts', key),
        );
        await new Promise((r) => setTimeout(r, 20));
        server.child.kill('SIGTERM');
        const signalled = Date.now();
        const [ended, answers] = await Promise.all([waitExit(server, 12_000), Promise.all(inFlight)]);
        stopTimes.push(Date.now() - signalled);
        outcomes.push(`${ended.killed ? 'HUNG' : 'exit'} ${ended.code}`);
        expect(ended.killed, `cycle ${cycle}: still alive 12 s after SIGTERM\n${server.output()}`).toBe(false);
        expect(ended.code, server.output()).toBe(0);
        expect(server.output()).not.toContain('shutdown deadline');
        // Accepted before the signal: answered in full. Arrived after the listener closed: refused
        // (0) or 503 from the closing server. Never a 500 or a reset half-way.
        for (const a of answers) expect([0, 200, 503], JSON.stringify(a.body)).toContain(a.status);
      }
    } finally {
      for (const req of hanging) req.socket.destroy();
      receiver.close();
      await scratch.dispose();
    }
    expect(outcomes.filter((o) => o !== 'exit 0')).toEqual([]);
    expect(deliveriesHangingAtStop).toBeGreaterThan(0);
    stopTimes.sort((a, b) => a - b);
    console.log(
      `shutdown (${scratch.kind}): ${CYCLES}/${CYCLES} stops ended by themselves, exit 0; a webhook delivery hung in ` +
        `${deliveriesHangingAtStop} of them; SIGTERM to exit median ${stopTimes[CYCLES >> 1]} ms, max ${stopTimes.at(-1)} ms`,
    );
  }, 600_000);
});
