import { Agent, request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { VIA_PROXY, type LoadResult } from './load.js';

/**
 * Open-loop load at an even rate: request i is due at start + i / rate and is sent then whatever
 * earlier ones are doing (over a keep-alive pool), its latency counted from when it was due, so a
 * slow answer cannot hide the ones queued behind it (no coordinated omission). autocannon's
 * overallRate is not this: each connection sends its share of a second back to back at the top of
 * the second and then idles, so "100/s over 10 connections" is a burst of 10 concurrent requests
 * ten times in a row every second.
 */
export async function steadyTransfers(
  options: { base: string; key: string; seconds: number; rate: number },
  pick: () => [string, string],
): Promise<LoadResult> {
  const url = new URL('/v1/transfers', options.base);
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const total = Math.round(options.seconds * options.rate);
  const latencies: number[] = [];
  const sendLags: number[] = [];
  const failures = new Map<string, number>();
  const start = performance.now() + 50;
  const one = (due: number) =>
    new Promise<void>((resolve) => {
      sendLags.push(performance.now() - due);
      const [from, to] = pick();
      const body = JSON.stringify({ source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' });
      const req = request(
        url,
        {
          method: 'POST',
          agent,
          headers: { ...VIA_PROXY, 'content-type': 'application/json', 'api-key': options.key, 'idempotency-key': randomUUID() },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) latencies.push(performance.now() - due);
            else failures.set(String(status), (failures.get(String(status)) ?? 0) + 1);
            resolve();
          });
        },
      );
      req.on('error', () => {
        failures.set('errors', (failures.get('errors') ?? 0) + 1);
        resolve();
      });
      req.end(body);
    });
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / options.rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inFlight.push(one(due));
  }
  await Promise.all(inFlight);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  sendLags.sort((a, b) => a - b);
  const quantile = (xs: number[], q: number) => Math.round((xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN) * 10) / 10;
  const at = (q: number) => quantile(latencies, q);
  const failed = [...failures.values()].reduce((a, b) => a + b, 0);
  return {
    ok: latencies.length,
    failed,
    failures: [...failures].map(([k, v]) => `${k}x${v}`).join(' ') || 'none',
    perSecond: latencies.length / options.seconds,
    p50: at(0.5),
    p99: at(0.99),
    sendLagP99: quantile(sendLags, 0.99),
  };
}
