import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pinoRedactPaths } from '../../src/lib/redact.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/** The process log's access line: one per request, plain fields, nothing secret in it. */
let t: TestApp;
let biz: CreatedTenant;
const lines: string[] = [];

beforeAll(async () => {
  // The production logger's redaction (app.ts), writing into `lines`.
  t = await startTestApp(
    {},
    { logger: { level: 'info', redact: pinoRedactPaths(), stream: { write: (line: string) => lines.push(line) } } },
  );
  biz = await t.tenant('Access Log Ltd');
});
afterAll(() => t.close());

const accessLines = () => lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request completed');

describe('the access log', () => {
  it('writes one line per request with its id, method, URL, status and time', async () => {
    const res = await clientFor(t, biz.sandbox.secret_key).get('/v1/accounts?limit=5');
    expect(res.status).toBe(200);
    const line = accessLines().find((entry) => entry.reqId === res.headers['x-request-id']);
    expect(line).toMatchObject({ level: 30, method: 'GET', url: '/v1/accounts?limit=5', statusCode: 200 });
    expect(line.responseTime).toBeGreaterThan(0);
  });

  it('makes no per-request pino child logger for a request that writes nothing (http/lazy-logger.ts)', async () => {
    const child = vi.spyOn(t.app.log, 'child');
    try {
      const res = await clientFor(t, biz.sandbox.secret_key).get('/v1/accounts?limit=1');
      expect(res.status).toBe(200);
      expect(accessLines().some((entry) => entry.reqId === res.headers['x-request-id'])).toBe(true);
      expect(child).not.toHaveBeenCalled();
    } finally {
      child.mockRestore();
    }
  });

  it('masks a card number or a key in the URL, and never shows the API key header', async () => {
    const res = await clientFor(t, biz.sandbox.secret_key).get('/v1/accounts?label=4242424242424242');
    expect(res.status).toBe(200);
    const line = accessLines().find((entry) => entry.reqId === res.headers['x-request-id']);
    expect(line.url).toBe('/v1/accounts?label=[redacted]');
    const all = lines.join('\n');
    expect(all).not.toContain('4242424242424242');
    expect(all).not.toContain(biz.sandbox.secret_key);
  });
});
