import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

/**
 * The server runs with PROFILE=production behind a (pretend) TLS-terminating proxy on 127.0.0.1:
 * production refuses plain HTTP unless a trusted proxy says the client used HTTPS.
 */
export const VIA_PROXY = { 'x-forwarded-proto': 'https' } as const;

export interface LoadResult {
  ok: number;
  failed: number;
  /** Failures by HTTP status (or "errors"/"timeouts"): a failed run says why. */
  failures: string;
  perSecond: number;
  p50: number;
  p99: number;
  /**
   * Open-loop loads: how late the load generator sent its requests (p99, ms), counted in the
   * latencies above. The share of a tail that is the bench's own process, not the server.
   */
  sendLagP99?: number;
}

export interface LoadOptions {
  base: string;
  key: string;
  seconds: number;
  connections: number;
}

async function run(options: LoadOptions, request: autocannon.Request): Promise<LoadResult> {
  const result = await autocannon({
    url: options.base,
    connections: options.connections,
    duration: options.seconds,
    requests: [request],
  });
  // Requests autocannon cut off at the end are still being served: let them finish before the next run.
  await new Promise((r) => setTimeout(r, 1000));
  const ok = result['2xx'];
  // autocannon counts timeouts among its errors.
  const failed = result.non2xx + result.errors;
  const byStatus = Object.entries(result.statusCodeStats ?? {})
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, v]) => `${code}x${(v as { count: number }).count}`);
  if (result.errors > 0) byStatus.push(`errors x${result.errors}${result.timeouts > 0 ? ` (${result.timeouts} of them timeouts)` : ''}`);
  return {
    ok,
    failed,
    failures: byStatus.join(' ') || 'none',
    perSecond: ok / options.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

/** The body of every transfer the bench makes: 1.00 from one account to another of the business. */
export function transferBody(from: string, to: string) {
  return { source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' };
}

/** A latency quantile of `sorted` (ascending, ms), rounded to 0.1 ms; NaN when empty. */
export function quantileMs(sorted: number[], q: number): number {
  return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN) * 10) / 10;
}

/** autocannon's request for POST /v1/transfers of 1.00 between the pairs `pick` returns, a fresh Idempotency-Key each. */
export function transferRequest(key: string, pick: () => [string, string]) {
  return {
    method: 'POST' as const,
    path: '/v1/transfers',
    setupRequest: (req: autocannon.Request) => {
      const [from, to] = pick();
      return {
        ...req,
        headers: { ...VIA_PROXY, 'content-type': 'application/json', 'api-key': key, 'idempotency-key': randomUUID() },
        body: JSON.stringify(transferBody(from, to)),
      };
    },
  };
}

/** POST /v1/transfers between the pairs `pick` returns, a fresh Idempotency-Key per request. */
export function transferLoad(options: LoadOptions, pick: () => [string, string]): Promise<LoadResult> {
  return run(options, transferRequest(options.key, pick));
}

/**
 * POST /v1/fx/orders: market orders selling 100.00 NGN for USD between the [NGN, USD] accounts
 * `pick` returns, a fresh Idempotency-Key per request. 100.00 NGN, not 1.00: at the default rate
 * (1,550 NGN a dollar) 1.00 NGN buys less than a cent.
 */
export function fxOrderLoad(options: LoadOptions, pick: () => [string, string]): Promise<LoadResult> {
  return run(options, {
    method: 'POST',
    path: '/v1/fx/orders',
    setupRequest: (req) => {
      const [from, to] = pick();
      return {
        ...req,
        headers: { ...VIA_PROXY, 'content-type': 'application/json', 'api-key': options.key, 'idempotency-key': randomUUID() },
        body: JSON.stringify({
          order_type: 'market',
          side: 'sell',
          pair: { base: 'NGN', quote: 'USD' },
          amount: '100.00',
          source_id: from,
          destination_id: to,
        }),
      };
    },
  });
}

/** GET /v1/accounts/{id} for the ids `pick` returns. */
export function accountReadLoad(options: LoadOptions, pick: () => string): Promise<LoadResult> {
  return run(options, {
    method: 'GET',
    path: '/v1/accounts',
    setupRequest: (req) => ({ ...req, path: `/v1/accounts/${pick()}`, headers: { ...VIA_PROXY, 'api-key': options.key } }),
  });
}

/** GET /healthz: no key, no database, no request log; what the HTTP layer alone serves. */
export function healthzLoad(options: LoadOptions): Promise<LoadResult> {
  return run(options, { method: 'GET', path: '/healthz', headers: { ...VIA_PROXY } });
}
