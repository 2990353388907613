import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * Issue #15: input a client controls never reaches PostgreSQL in a form it rejects (NUL, invalid
 * UTF-8), never overflows the stack (deep JSON), and never answers 500.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await startTestApp();
  api = clientFor(t, (await t.tenant('Hardening Co')).sandbox.secret_key);
});
afterAll(() => t.close());

function expectValidation(res: { status: number; body: any }, field: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('validation_failed');
  expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
}

const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);
const deepObject = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

describe('text query parameters', () => {
  const cases: [string, string][] = [
    ['/v1/customers', 'email'],
    ['/v1/customers', 'keyword'],
    ['/v1/accounts', 'label'],
    ['/v1/transactions', 'reference'],
    ['/v1/transactions/volume', 'reference'],
    ['/v1/webhooks/history', 'transaction_id'],
  ];

  it.each(cases)('%s?%s= with a NUL byte is 400 naming the field', async (path, field) => {
    expectValidation(await api.get(`${path}?${field}=a%00b`), field);
  });

  it.each(cases)('%s?%s= with invalid UTF-8 is 400 naming the field', async (path, field) => {
    expectValidation(await api.get(`${path}?${field}=a%FF%FEb`), field);
  });

  it('a NUL in a query parameter the route does not know is still 400, not 500', async () => {
    const res = await api.get('/v1/customers?x=%00');
    expect(res.status).toBe(400);
  });

  it('a NUL in a path parameter is 400 naming it', async () => {
    expectValidation(await api.get('/v1/customers/a%00b'), 'customer_id');
  });

  it('invalid UTF-8 in a path is a 4xx, never 500', async () => {
    const res = await api.get('/v1/customers/a%FFb');
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
  });
});

describe('JSON bodies', () => {
  it('a NUL in a string value is 400 naming the field', async () => {
    const body = JSON.stringify(johnDoe({ first_name: 'Jo\u0000hn' }));
    expectValidation(await api.post('/v1/customers', body), 'first_name');
  });

  it('a NUL in a nested string value names its path', async () => {
    const c = johnDoe();
    const body = JSON.stringify({ ...c, address: { ...c.address, city: 'La\u0000gos' } });
    expectValidation(await api.post('/v1/customers', body), 'address.city');
  });

  it('a lone surrogate (not representable in UTF-8) is 400 naming the field', async () => {
    const body = JSON.stringify(johnDoe()).replace('"John"', '"Jo\\ud800hn"');
    expectValidation(await api.post('/v1/customers', body), 'first_name');
  });

  it('bytes that are not UTF-8 are 400 (not stored as replacement characters)', async () => {
    const [before, after] = JSON.stringify(johnDoe()).split('Jo');
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/customers',
      headers: {
        'api-key': (await t.tenant('Bytes Co')).sandbox.secret_key,
        'idempotency-key': 'bytes-1',
        'content-type': 'application/json',
      },
      payload: Buffer.concat([Buffer.from(`${before}Jo`), Buffer.from([0xff, 0xfe]), Buffer.from(after!)]),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ code: 'validation_failed', details: [{ field: 'body' }] });
  });

  it('a field name with a NUL is 400', async () => {
    const res = await api.post('/v1/customers', JSON.stringify({ ...johnDoe(), 'a\u0000b': 1 }));
    expectValidation(res, 'body');
  });

  it.each([
    ['/v1/accounts/applications/00000000-0000-7000-8000-000000000000/submit'],
    ['/v1/accounts/applications/00000000-0000-7000-8000-000000000000/process'],
    ['/v1/webhooks/event/send/00000000-0000-7000-8000-000000000000'],
    ['/v1/customers'],
  ])('a body nested 5,000 levels deep on %s is 400 validation_failed', async (path) => {
    for (const body of [deep(5000), deepObject(5000)]) {
      const res = await api.post(path, body);
      expect(res.status, res.text).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details[0].field).toBe('body');
    }
  });

  it('a body nested within the limit still reaches validation (unknown field named)', async () => {
    const res = await api.post('/v1/customers', JSON.stringify({ ...johnDoe(), extra: JSON.parse(deep(20)) }));
    expectValidation(res, 'extra');
  });

  it('routes that take no body refuse a non-empty one, naming its fields', async () => {
    const res = await api.post('/v1/webhooks/event/send/00000000-0000-7000-8000-000000000000', { force: true });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([expect.objectContaining({ field: 'force', code: 'unknown_field' })]);
    const arr = await api.post('/v1/accounts/applications/00000000-0000-7000-8000-000000000000/submit', [1]);
    expectValidation(arr, 'body');
  });

  it('routes that take no body accept none, or an empty object', async () => {
    const none = await api.post('/v1/webhooks/event/send/00000000-0000-7000-8000-000000000000');
    expect(none.status).toBe(404);
    const empty = await api.post('/v1/webhooks/event/send/00000000-0000-7000-8000-000000000000', {});
    expect(empty.status).toBe(404);
  });

  it('DELETE with a body is refused', async () => {
    const direct = await t.request(
      'DELETE',
      '/v1/collections/cards/00000000-0000-7000-8000-000000000000',
      { a: 1 },
      { key: (await t.tenant('Del Co')).sandbox.secret_key },
    );
    expect(direct.status).toBe(400);
  });
});
