import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../src/lib/crypto.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { createCustomer, JPEG_B64, PNG_B64 } from '../kyc-helpers.js';

let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await startTestApp();
  api = clientFor(t, (await t.tenant('Hosted Co')).sandbox.secret_key);
});
afterAll(() => t.close());

async function start(customerId: string) {
  const res = await api.post('/v1/customers/kyc/start', { customer_id: customerId }, { headers: { host: 'api.example.test' } });
  expect(res.status).toBe(200);
  return new URL(res.body.data.web_url);
}

const page = (path: string) => t.app.inject({ method: 'GET', url: path });
const post = (path: string, body?: unknown) =>
  t.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body ?? {}) });

describe('hosted verification page', () => {
  it('builds web_url from the request host and stores only the token hash', async () => {
    const id = await createCustomer(api, johnDoe());
    const url = await start(id);
    expect(url.origin).toBe('http://api.example.test');
    const token = url.pathname.split('/').pop()!;
    const row = await t.db.selectFrom('kyc_cases').selectAll().where('customer_id', '=', id).executeTakeFirstOrThrow();
    expect(Buffer.from(row.web_token_hash!).equals(sha256(token))).toBe(true);
    expect(JSON.stringify(row)).not.toContain(token);
  });

  it('serves a self-contained page with a strict CSP and no referrer', async () => {
    const id = await createCustomer(api, johnDoe());
    const url = await start(id);
    const res = await page(url.pathname);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('<form id="upload">');
    expect(res.body).not.toMatch(/<script[^>]+src=/);
  });

  it('lets the customer upload and submit, then shows the result', async () => {
    const id = await createCustomer(api, johnDoe({ first_name: 'Web', last_name: 'Customer' }));
    const { pathname } = await start(id);
    const early = await post(`${pathname}/submit`);
    expect(early.statusCode).toBe(412);
    const up = await post(`${pathname}/documents`, {
      metadata: { idDocType: 'ID_CARD', idDocSubType: 'FRONT_SIDE', country: 'NGA' },
      filename: 'id.png',
      content: `data:image/png;base64,${PNG_B64}`,
    });
    expect(up.statusCode).toBe(200);
    // A file that is no image or PDF at all is refused; its name's extension is not held against
    // a real image (docs/api-rules.md#reference-examples), so the JPEG below is accepted whatever it is called.
    const bad = await post(`${pathname}/documents`, {
      metadata: { idDocType: 'SELFIE', country: 'NGA' },
      filename: 'me.png',
      content: Buffer.from('MZ\x90\x00 executable').toString('base64'),
    });
    expect(bad.statusCode).toBe(400);
    expect(
      (await post(`${pathname}/documents`, { metadata: { idDocType: 'SELFIE', country: 'NGA' }, filename: 'me.jpg', content: JPEG_B64 }))
        .statusCode,
    ).toBe(200);
    const submit = await post(`${pathname}/submit`);
    expect(submit.statusCode).toBe(200);
    expect(JSON.parse(submit.body).data.reviewResult.reviewAnswer).toBe('approved');
    expect((await api.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe('approved');
    const after = await page(pathname);
    expect(after.body).toContain('verified');
    expect(after.body).not.toContain('<form');
  });

  it('refuses unknown, malformed and expired tokens', async () => {
    expect((await page('/kyc/verify/' + 'x'.repeat(43))).statusCode).toBe(404);
    expect((await page('/kyc/verify/short')).statusCode).toBe(404);
    expect((await post('/kyc/verify/' + 'x'.repeat(43) + '/submit')).statusCode).toBe(404);
    const id = await createCustomer(api, johnDoe());
    const { pathname } = await start(id);
    await t.db
      .updateTable('kyc_cases')
      .set({ web_token_expires_at: new Date(Date.now() - 1000) })
      .where('customer_id', '=', id)
      .execute();
    const expired = await page(pathname);
    expect(expired.statusCode).toBe(404);
    expect(expired.body).toContain('expired');
    expect(
      (await post(`${pathname}/documents`, { metadata: { idDocType: 'SELFIE', country: 'NGA' }, filename: 'me.jpg', content: JPEG_B64 }))
        .statusCode,
    ).toBe(404);
  });

  it('a new link replaces the old one; each link opens only its own customer', async () => {
    const a = await createCustomer(api, johnDoe());
    const b = await createCustomer(api, johnDoe());
    const first = await start(a);
    const second = await start(a);
    expect((await page(first.pathname)).statusCode).toBe(404);
    expect((await page(second.pathname)).statusCode).toBe(200);
    await post(`${second.pathname}/documents`, {
      metadata: { idDocType: 'SELFIE', country: 'NGA' },
      filename: 'me.jpg',
      content: JPEG_B64,
    });
    expect((await api.get(`/v1/customers/${a}/kyc/documents`)).body.data.count).toBe(1);
    expect((await api.get(`/v1/customers/${b}/kyc/documents`)).body.data.count).toBe(0);
  });
});
