import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * Issue #15: an export that fails must look failed. A failure before the first row is a normal
 * error answer (status and envelope); a failure after rows went out aborts the transfer, so the
 * client never holds a short file that looks complete.
 */
let t: TestApp;
let api: Client;
let key: string;
let tenantId: string;
let accountId: string;
let port: number;

beforeAll(async () => {
  t = await startTestApp();
  const biz = await t.tenant('Export Co');
  key = biz.sandbox.secret_key;
  tenantId = biz.tenant_id;
  api = clientFor(t, key);
  accountId = (await api.post('/v1/accounts', { currency: 'NGN', label: 'export' })).body.data.id;
  expect((await api.post(`/v1/simulations/accounts/${accountId}/fund`, { amount: '10.00' })).status).toBe(200);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(() => t.close());

interface Transfer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The response ended cleanly (complete chunked encoding). */
  complete: boolean;
  /** The connection broke before the response ended. */
  broken: boolean;
}

/** A real HTTP GET over a socket, reporting whether the transfer ended cleanly. */
function fetchRaw(path: string): Promise<Transfer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { 'api-key': key } }, (res) => {
      const chunks: Buffer[] = [];
      let complete = false;
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (complete = true));
      res.on('error', () => undefined);
      res.on('close', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          complete: complete && !res.aborted,
          broken: res.aborted || !complete,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** Copies of the funding row, newest ids last; `broken` makes one row unrenderable (corrupt data). */
async function seedRows(count: number, brokenAt: 'oldest' | 'newest' | null) {
  const seed = await t.db.selectFrom('transactions').selectAll().where('tenant_id', '=', tenantId).executeTakeFirstOrThrow();
  const rows = [];
  for (let i = 0; i < count; i++) {
    const broken = (brokenAt === 'oldest' && i === 0) || (brokenAt === 'newest' && i === count - 1);
    rows.push({ ...seed, id: newId(), reference: `seed-${i}`, currency: broken ? 'ZZZ' : seed.currency });
  }
  await t.db
    .insertInto('transactions')
    .values(rows as never)
    .execute();
  return rows;
}

async function clearSeeds() {
  await t.db.deleteFrom('transactions').where('tenant_id', '=', tenantId).where('reference', 'like', 'seed-%').execute();
}

describe('GET /v1/transactions/export', () => {
  it('succeeds cleanly when nothing fails (the baseline the other cases differ from)', async () => {
    await seedRows(600, null);
    try {
      const res = await fetchRaw('/v1/transactions/export?export_format=json');
      expect(res.status).toBe(200);
      expect(res.complete).toBe(true);
      expect(JSON.parse(res.body)).toHaveLength(601);
    } finally {
      await clearSeeds();
    }
  });

  it('a database error on the first page is a normal error answer, not a 200 with a short file', async () => {
    await sql`alter table transactions rename to transactions_away`.execute(t.db);
    try {
      for (const format of ['csv', 'json']) {
        const res = await fetchRaw(`/v1/transactions/export?export_format=${format}`);
        expect(res.status, res.body).toBe(500);
        expect(res.headers['content-disposition']).toBeUndefined();
        expect(JSON.parse(res.body).error.code).toBe('internal_error');
      }
    } finally {
      await sql`alter table transactions_away rename to transactions`.execute(t.db);
    }
  });

  it('a failure on the first row is also a normal error answer', async () => {
    await seedRows(3, 'newest');
    try {
      const res = await fetchRaw('/v1/transactions/export?export_format=csv');
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.headers['content-disposition']).toBeUndefined();
      expect(JSON.parse(res.body).error).toBeTruthy();
    } finally {
      await clearSeeds();
    }
  });

  it('a failure after rows were sent breaks the transfer (no clean end of the chunked body)', async () => {
    // 600 rows: the first page (500) goes out, the broken row is on the second.
    await seedRows(600, 'oldest');
    try {
      for (const format of ['csv', 'json']) {
        const res = await fetchRaw(`/v1/transactions/export?export_format=${format}`);
        expect(res.status).toBe(200);
        expect(res.body.length).toBeGreaterThan(0);
        expect(res.complete, `${format}: the client must not see a complete file`).toBe(false);
        expect(res.broken).toBe(true);
        if (format === 'json') expect(() => JSON.parse(res.body)).toThrow();
      }
    } finally {
      await clearSeeds();
    }
  });
});
