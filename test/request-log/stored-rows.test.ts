import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CapturedRequest } from '../../src/core/request-log.js';
import { RequestLog } from '../../src/modules/request-log/service.js';
import { startTestApp, type TestApp } from '../harness.js';

/**
 * Every column of the rows the request log stores for a fixed set of captured requests, against
 * the rows the log stored before its work per request was cut (the file snapshot was written by
 * that code): the redaction, the cuts, the text columns' encoding and the insert's parameters
 * must leave every row as it was.
 */
let t: TestApp;
let tenantId: string;

beforeAll(async () => {
  t = await startTestApp();
  tenantId = (await t.tenant('Stored Rows Co')).tenant_id;
});
afterAll(() => t.close());

const at = Date.UTC(2026, 11, 2, 12, 0, 0);
const card = '4242424242424242';
const accountAnswer = (id: string, metadata: unknown = {}) =>
  JSON.stringify({
    data: {
      id,
      label: 'main "NGN" \\ account',
      date_created: '2026-12-02T16:31:03.248Z',
      currency: 'NGN',
      balance: '100000000.00',
      is_tokenized: false,
      account_number: '9753111062',
      bank_details: { account_number: '9753111062', bank_code: '999', iban: null },
      metadata,
    },
    error: null,
  });
const nested = (depth: number): unknown => (depth === 0 ? { pin: '1234' } : { next: nested(depth - 1) });
const withProto = JSON.parse('{"__proto__": {"pin": "1234"}, "amount": "1.00"}') as unknown;

/** Requests as the HTTP layer hands them over: [url, request body, response body, extra fields]. */
const cases: [string, unknown, string | null, Partial<CapturedRequest>?][] = [
  // An account read: no secret, no long digit run, no sensitive key.
  ['/v1/accounts/01a23798-62a7-7710-a293-2e5bcb0a62d5', undefined, accountAnswer('01a23798-62a7-7710-a293-2e5bcb0a62d5')],
  // Ids whose digits run to 13 across their dashes, Luhn-valid (redacted) and not.
  ['/v1/accounts/01a23798-6257-7710-a293-2e5bcb0a62d5', undefined, accountAnswer('01a23798-6257-7710-a293-2e5bcb0a62d5')],
  ['/v1/accounts/01a23798-6257-7711-a293-2e5bcb0a62d5', undefined, accountAnswer('01a23798-6257-7711-a293-2e5bcb0a62d5')],
  // Free-form metadata with sensitive keys, flags and nulls.
  ['/v1/accounts/x', undefined, accountAnswer('x', { cardPin: '4821', pin_set: true, token: null, note: 'spin the panel' })],
  // A transfer: the parsed body and its answer.
  [
    '/v1/transfers',
    { source: { id: 'a' }, destination: { destination_type: 'internal_account', id: 'b' }, amount: '1.00', metadata: { ref: 'x' } },
    '{"data":{"id":"t","status":"completed","amount":"1.00","metadata":{"ref":"x"}},"error":null}',
    { method: 'POST', status: 201, idempotencyKey: 'idem-1', replayed: true },
  ],
  // Secrets in a request body: nested, in arrays, as key-shaped strings and card numbers in free text.
  [
    '/v1/simulations/card-tokens',
    {
      card_number: card,
      expiry: '12/30',
      cvv: 123,
      holder: { new_pin: '0000', tags: ['sk_sandbox_abcdefgh1234', `${card} x`] },
      ok: false,
    },
    '{"data":{"card_token":"tok_123","last4":"4242","secret":"whsec_abcdefgh12345678"},"error":null}',
    { method: 'POST' },
  ],
  ['/v1/x', [1, 'two', { password: 'p', list: [{ cvc: '1' }] }, null, true], '[]', { method: 'POST' }],
  ['/v1/x', { deep: nested(40) }, null, { method: 'POST' }],
  ['/v1/x', withProto, null, { method: 'POST' }],
  ['/v1/x', { when: new Date(at), bytes: Buffer.from('ab') }, null, { method: 'POST' }],
  ['/v1/x', { n: 12, f: 1.5, big: 1e21, neg: -0, s: 'plain', empty: {}, none: [] }, null, { method: 'PATCH' }],
  // Text bodies, not JSON: redacted as strings.
  [
    '/v1/x',
    `note sk_live_ABCDEFGH12345678 and 4000 0000 0000 0002, whsec_zzzzzzzz`,
    'not json: sk_sandbox_ABCDEFGH1234 4000-0000-0000-0002',
  ],
  ['/v1/x', null, '{"broken": "json", "secret": '],
  ['/v1/x', '[body of 300000 bytes not kept]', null, { method: 'PUT' }],
  // Characters: quotes, backslashes, controls, lone surrogates, emoji, raw newlines.
  ['/v1/x', { text: 'tab\there "q" \\ back \u0001 \ud800 é ✓ 🙂' }, 'raw\nline\ttab "q" \\ \u0001 \ud800 é ✓ 🙂'],
  ['/v1/x', undefined, JSON.stringify({ data: { text: 'new\nline \\n literal \u001f', secret: 'x' } })],
  ['/v1/x', undefined, JSON.stringify({ data: { text: 'new\nline \\n literal \u001f é' } })],
  ['/v1/x', undefined, '"a","b":1 {"c\\":"d"} \\'],
  // Spacing a re-encoding would drop: kept when no key is sensitive, dropped when one is.
  ['/v1/x', undefined, '{ "x" : [1, 2],\n "y": "z" }'],
  ['/v1/x', undefined, '{ "pin_set" : true,\n "x": [1, 2] }'],
  ['/v1/x', undefined, '{"card\\u005fnumber":"4111"}'],
  ['/v1/x', undefined, '{"card\\u005fnumber":"4111","a\\"b":{"c\\\\":"d"},"e":":","pin":"1"}'],
  // Bodies longer than kept, JSON and not.
  ['/v1/x', { list: Array.from({ length: 3000 }, (_, i) => `item-${i}`) }, JSON.stringify({ data: 'y'.repeat(20_000) })],
  ['/v1/x', 'z'.repeat(17_000), 'w'.repeat(16_385)],
  // Query strings: secrets, card numbers, long, empty.
  ['/v1/accounts?limit=10&key=sk_sandbox_ABCDEFGH1234&pan=4242 4242 4242 4242', undefined, '{"data":[],"error":null}'],
  [`/v1/accounts?q=${'q'.repeat(3000)}`, undefined, null],
  ['/v1/accounts?', undefined, null],
  [`/v1/${'p'.repeat(2100)}`, undefined, null, { status: 404 }],
  // Headers and timings.
  ['/v1/x', undefined, null, { requestId: 'r'.repeat(200), idempotencyKey: 'k'.repeat(300), status: 500, durationMs: 12.5 }],
  ['/v1/x', undefined, null, { durationMs: -3, keyPrefix: null, status: 302 }],
  // An answer that is its event's data (a transfer's, migration 1264): the event's id, no text.
  [
    '/v1/transfers',
    { source: { id: 'a' }, destination: { destination_type: 'internal_account', id: 'b' }, amount: '2.00' },
    null,
    { method: 'POST', responseEventId: '01a23798-0000-7000-8000-00000000e0e0' },
  ],
];

describe('the rows the request log stores', () => {
  it('are, every column, the rows stored before', async () => {
    const log = new RequestLog(t.db);
    cases.forEach(([url, requestBody, responseBody, extra], i) =>
      log.record({
        tenantId,
        environment: i % 5 === 4 ? 'live' : 'sandbox',
        requestId: `stored-${i}`,
        method: 'GET',
        url,
        status: 200,
        durationMs: 1.4,
        idempotencyKey: null,
        replayed: false,
        keyPrefix: 'sk_sandbox_…abcd',
        requestBody,
        responseBody,
        startedAt: at + i,
        id: `01a23798-0000-7000-8000-${String(i).padStart(12, '0')}`,
        ...extra,
      }),
    );
    await log.flush();
    expect(log.written).toBe(cases.length);
    const rows = await t.db.selectFrom('api_request_log').selectAll().where('tenant_id', '=', tenantId).orderBy('id').execute();
    // The column of migration 1264 is shown where it is set: the rows stored before it had none.
    const stored = rows.map(({ response_event_id, ...r }) => ({
      ...r,
      tenant_id: 'the business',
      created_at: r.created_at.toISOString(),
      ...(response_event_id === null ? {} : { response_event_id }),
    }));
    await expect(`${JSON.stringify(stored, null, 2)}\n`).toMatchFileSnapshot('./stored-rows.json');
  });
});
