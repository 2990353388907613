import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { call, scratchDatabase, startServer, type ServerProcess } from '../server-process.js';

/**
 * Concurrent transfers reaching the real server (a process of its own) over kept-alive
 * connections are written in shared batches (docs/money-path.md), on both databases. Before: a
 * batch started at the first request's submit and held only it; on PGlite, whose statements run
 * in the server's own thread, the next requests could not even be parsed before it ended, so
 * every batch there was one request (40 batches for these 40 transfers; the benchmark's PGlite
 * run: batches of 1, 40–100 transfers/s).
 */
let server: ServerProcess;
let dispose: () => Promise<void>;
beforeAll(async () => {
  const scratch = await scratchDatabase();
  dispose = scratch.dispose;
  server = await startServer({ ...scratch.env, DEMO_TENANT: 'true', TRANSFER_BATCH_LANES: '1' });
}, 180_000);
afterAll(async () => {
  server?.child.kill('SIGTERM');
  await server?.exited;
  await dispose?.();
});

/** The posting path's batch-size histogram as the server's /metrics shows it: batches and requests. */
async function batches(): Promise<{ count: number; sum: number }> {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const of = (suffix: string) =>
    Number(new RegExp(`^fsapi_commit_batch_size_${suffix}\\{batch="transfers"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { count: of('count'), sum: of('sum') };
}

/** A request over `agent` (node:http, connections kept alive, as the benchmark's client): its status. */
function send(agent: Agent, method: string, path: string, key: string, body?: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.base}${path}`,
      { method, agent, headers: { 'content-type': 'application/json', 'api-key': key, 'idempotency-key': newId() } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('requests that arrive together are written together', () => {
  it('gathers concurrent transfers over sockets into shared batches', async () => {
    const key = server.demoKey;
    const open = async () => (await call(server.base, 'POST', '/v1/accounts', key, { currency: 'NGN', label: 'g' }, newId())).body.data.id;
    const from = await open();
    const to = await open();
    expect((await call(server.base, 'POST', `/v1/simulations/accounts/${from}/fund`, key, { amount: '100.00' }, newId())).status).toBe(200);

    const before = await batches();
    const n = 40;
    const agent = new Agent({ keepAlive: true, maxSockets: n });
    // Connections open first, as a client that keeps them alive has them.
    await Promise.all(Array.from({ length: n }, () => send(agent, 'GET', `/v1/accounts/${from}`, key)));
    const body = { source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' };
    const statuses = await Promise.all(Array.from({ length: n }, () => send(agent, 'POST', '/v1/transfers', key, body)));
    agent.destroy();
    expect(statuses).toEqual(Array.from({ length: n }, () => 200));
    const after = await batches();
    expect(after.sum - before.sum).toBe(n);
    expect(after.count - before.count).toBeLessThanOrEqual(n / 4);
  });
});
