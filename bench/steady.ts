import { connect, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { quantileMs, transferBody, VIA_PROXY, type LoadResult } from './load.js';

/**
 * Open-loop load at an even rate: request i is due at start + i / rate and is sent then whatever
 * earlier ones are doing, each on a keep-alive connection of its own while it runs, its latency
 * counted from when it was due, so a slow answer cannot hide the ones queued behind it (no
 * coordinated omission). autocannon's overallRate is not this: each connection sends its share of
 * a second back to back at the top of the second and then idles, so "100/s over 10 connections"
 * is a burst of 10 concurrent requests ten times in a row every second.
 *
 * The generator's own work counts in every latency it measures (a request sent late is late from
 * when it was due), and pgbench, the reference, is a C program that spends microseconds a
 * transaction. So this one does as little as it can while the clock runs: every request's bytes
 * are built before the start, each is written to a plain socket, and an answer is read only as
 * far as its status line and length. Over `node:http`'s client the same server measured p50 and
 * p99 higher by the client's own parsing and allocation, and its sends were later.
 */
export async function steadyTransfers(
  options: { base: string; key: string; seconds: number; rate: number },
  pick: () => [string, string],
): Promise<SteadyResult> {
  const url = new URL(options.base);
  const total = Math.round(options.seconds * options.rate);
  const requests = Array.from({ length: total }, () => transferRequestBytes(url.host, options.key, pick()));
  const latencies: number[] = [];
  const sendLags: number[] = [];
  const failures = new Map<string, number>();
  const fail = (why: string) => failures.set(why, (failures.get(why) ?? 0) + 1);
  const idle: Connection[] = [];
  const open = () =>
    openConnection(url, (c, status) => {
      if (status >= 200 && status < 300) latencies.push(performance.now() - c.due);
      else fail(status === 0 ? 'errors' : String(status));
      if (!c.closed) idle.push(c);
      c.settle();
    });
  for (let i = 0; i < 16; i++) idle.push(await open());
  const answered: Promise<void>[] = [];
  const start = performance.now() + 50;
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / options.rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sendLags.push(performance.now() - due);
    let c = idle.pop();
    while (c?.closed) c = idle.pop();
    c ??= await open();
    answered.push(new Promise<void>((resolve) => (c.settle = resolve)));
    c.send(requests[i]!, due);
  }
  await Promise.all(answered);
  for (const c of idle) c.socket.destroy();
  return steadyResult([{ latencies, sendLags, failures, seconds: options.seconds }]);
}

/** An open-loop run's figures, with the samples they were taken from. */
export interface SteadyResult extends LoadResult {
  samples: SteadySamples;
}

/** Each answered request's latency and each request's send lag (ms), and the failures by status. */
export interface SteadySamples {
  latencies: number[];
  sendLags: number[];
  failures: Map<string, number>;
  seconds: number;
}

/** The figures of one open-loop run, or of several runs' samples pooled (bench/tails.ts). */
export function steadyResult(runs: SteadySamples[]): SteadyResult {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const sendLags = runs.flatMap((r) => r.sendLags).sort((a, b) => a - b);
  const failures = new Map<string, number>();
  for (const [why, n] of runs.flatMap((r) => [...r.failures])) failures.set(why, (failures.get(why) ?? 0) + n);
  const seconds = runs.reduce((t, r) => t + r.seconds, 0);
  return {
    ok: latencies.length,
    failed: [...failures.values()].reduce((a, b) => a + b, 0),
    failures: [...failures].map(([k, v]) => `${k}x${v}`).join(' ') || 'none',
    perSecond: latencies.length / seconds,
    p50: quantileMs(latencies, 0.5),
    p99: quantileMs(latencies, 0.99),
    sendLagP99: quantileMs(sendLags, 0.99),
    samples: { latencies, sendLags, failures, seconds },
  };
}

/** POST /v1/transfers of 1.00 between a pair, a fresh Idempotency-Key, as the bytes sent. */
function transferRequestBytes(host: string, key: string, [from, to]: [string, string]): Buffer {
  const body = JSON.stringify(transferBody(from, to));
  const headers = {
    host,
    ...VIA_PROXY,
    'content-type': 'application/json',
    'api-key': key,
    'idempotency-key': randomUUID(),
    'content-length': String(Buffer.byteLength(body)),
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return Buffer.from(`POST /v1/transfers HTTP/1.1\r\n${head}\r\n${body}`);
}

interface Connection {
  /** Writes a request; its latency will count from `due` (performance.now()). */
  send(request: Buffer, due: number): void;
  /** When the request in flight was due. */
  due: number;
  /** Resolves the request in flight's promise. */
  settle: () => void;
  closed: boolean;
  socket: Socket;
}

/**
 * A keep-alive connection that reads each answer to its end (its `content-length`) and hands its
 * status to `answered`; status 0 when the connection closed with a request in flight (or its answer
 * had no length).
 */
function openConnection(url: URL, answered: (c: Connection, status: number) => void): Promise<Connection> {
  return new Promise((resolve, reject) => {
    let pending: Buffer = Buffer.alloc(0);
    let busy = false;
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.off('error', reject);
      socket.on('error', () => {}); // 'close' follows, and settles a request in flight
      resolve(c);
    });
    const c: Connection = {
      socket,
      due: 0,
      settle: () => {},
      closed: false,
      send(request, due) {
        busy = true;
        c.due = due;
        socket.write(request);
      },
    };
    socket.setNoDelay(true);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      const headEnd = pending.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = pending.subarray(0, headEnd).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
      // An answer this reader cannot delimit (chunked) ends the connection; 'close' counts the request as failed.
      if (Number.isNaN(length)) return void socket.destroy();
      if (pending.length < headEnd + 4 + length) return;
      pending = pending.subarray(headEnd + 4 + length);
      busy = false;
      answered(c, Number(head.slice(9, 12)));
    });
    socket.on('close', () => {
      c.closed = true;
      if (busy) answered(c, 0);
    });
  });
}
