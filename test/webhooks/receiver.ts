import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** How the receiver answers: a status (and optional headers/body), or 'hang' (never answers). */
export type Behaviour = (req: Received, n: number) => { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/** A real local HTTP receiver on 127.0.0.1, port chosen by the OS. */
export async function startReceiver(behaviour: Behaviour = () => ({ status: 200, body: '{"ok":true}' }), port = 0) {
  const received: Received[] = [];
  const hanging = new Set<ServerResponse>();
  let current = behaviour;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      const answer = current(r, received.length);
      if (answer === 'hang') {
        hanging.add(res);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}/hook`,
    port: bound,
    received,
    setBehaviour(b: Behaviour) {
      current = b;
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Repeats `step` until `done()` holds or the time is up. */
export async function until(done: () => boolean | Promise<boolean>, step: () => Promise<unknown>, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await step();
    await sleep(10);
  }
}
