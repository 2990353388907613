import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyRequest } from 'fastify';
import { newId } from '../../src/lib/ids.js';
import { assertDeclaresErrors, checkDeclared, constructionCodes, undeclaredErrors } from '../../src/http/route-errors.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

let t: TestApp;
let api: Client;
let customerId: string;

beforeAll(async () => {
  t = await startTestApp();
  api = clientFor(t, (await t.tenant('Acme Ltd')).sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customerId);
});
afterAll(async () => t?.close());

const codesOf = (responses: Record<string, any>, status: string): string[] | undefined =>
  responses[status]?.content?.['application/json']?.schema?.properties?.error?.properties?.code?.enum;

describe('per-route error codes in /v1/openapi.json', () => {
  it('POST /v1/transfers lists its declared codes, per status', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const responses = doc.paths['/v1/transfers'].post.responses;
    expect(codesOf(responses, '422')).toEqual(['idempotency_key_reused', 'insufficient_funds', 'limit_exceeded', 'currency_mismatch']);
    expect(codesOf(responses, '409')).toEqual([
      'account_frozen',
      'account_inactive',
      'card_blocked',
      'invalid_state_transition',
      'conflict',
      'idempotency_request_in_progress',
    ]);
    expect(codesOf(responses, '404')).toEqual(['not_found']);
    expect(codesOf(responses, '413')).toEqual(['payload_too_large']);
    expect(codesOf(responses, '412')).toBeUndefined();
    expect(codesOf(responses, '403')).toEqual([
      'secret_key_required',
      'tenant_mismatch',
      'live_access_frozen',
      'https_required',
      'feature_not_active',
      'kyc_level_insufficient',
    ]);
  });

  it('GET /v1/accounts/{account_id} lists only what a read by id can answer', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const responses = doc.paths['/v1/accounts/{account_id}'].get.responses;
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '401', '403', '404', '429', '500', '503']);
    expect(codesOf(responses, '404')).toEqual(['not_found']);
    expect(codesOf(responses, '400')).toEqual(['bad_request', 'validation_failed']);
    expect(JSON.stringify(responses)).not.toContain('insufficient_funds');
    // A list has no id in its path: no 404.
    expect(doc.paths['/v1/accounts'].get.responses['404']).toBeUndefined();
  });

  it('every /v1 operation lists only its own codes, each error status closed to them', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    let operations = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        operations++;
        for (const [status, response] of Object.entries<any>(op.responses)) {
          if (Number(status) < 400) continue;
          expect(codesOf(op.responses, status), `${method} ${path} ${status}`).toBeDefined();
          expect(response.$ref, `${method} ${path} ${status}: no shared broad schema`).toBeUndefined();
        }
        // 412 only where missing documents can be answered (KYC's server-to-server start).
        if (op.responses['412']) expect(codesOf(op.responses, '412')).toEqual(['missing_documents']);
      }
    }
    expect(operations).toBeGreaterThan(80);
    expect(Object.keys(doc.components?.schemas ?? {}).filter((n) => /^Error\d{3}$/.test(n))).toEqual([]);
  });

  it('the routes declared last list their business codes under the right status', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    const fxOrder = doc.paths['/v1/fx/orders'].post.responses;
    expect(codesOf(fxOrder, '422')).toEqual(
      expect.arrayContaining(['insufficient_funds', 'limit_exceeded', 'currency_mismatch', 'unprocessable']),
    );
    expect(codesOf(fxOrder, '409')).toEqual(expect.arrayContaining(['account_frozen', 'quote_expired', 'quote_used']));
    const card = doc.paths['/v1/cards'].post.responses;
    expect(codesOf(card, '403')).toEqual(expect.arrayContaining(['kyc_level_insufficient', 'feature_not_active']));
    expect(codesOf(doc.paths['/v1/customers/kyc/start-s2s'].post.responses, '412')).toEqual(['missing_documents']);
    const secret = doc.paths['/v1/cards/{card_id}/pin'].get.responses;
    expect(codesOf(secret, '400')).toEqual(expect.arrayContaining(['missing_client_public_key', 'invalid_client_public_key']));
    // A delete reads no body, but Fastify parses one if sent: malformed JSON is a 400 it can answer.
    expect(codesOf(doc.paths['/v1/external-accounts/{external_account_id}'].delete.responses, '400')).toContain('invalid_json');
    expect(doc.paths['/v1/webhooks/endpoints'].post.responses['201']).toBeDefined();
    expect(doc.paths['/v1/external-accounts'].post.responses['202']).toBeDefined();
  });

  it('keeps the `errors` declaration itself out of the document', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    expect(doc.paths['/v1/transfers'].post.errors).toBeUndefined();
  });
});

describe('answers are checked against the declared codes in test runs', () => {
  it('representative failures of accounts and transfers answer only declared codes', async () => {
    const ngn = (await api.post('/v1/accounts', { currency: 'NGN', label: 'a' })).body.data.id as string;
    const other = (await api.post('/v1/accounts', { currency: 'NGN', label: 'b' })).body.data.id as string;
    const transfer = (source: string, amount: string) => ({
      source: { source_type: 'internal_account', id: source },
      destination: { destination_type: 'internal_account', id: other },
      amount,
      description: 'rent',
    });
    expect((await api.get(`/v1/accounts/${newId()}`)).status).toBe(404);
    expect((await api.post('/v1/accounts', { currency: 'XXX', label: 'x' })).status).toBe(400);
    expect((await t.request('GET', '/v1/accounts')).status).toBe(401);
    expect((await api.post('/v1/transfers', transfer(ngn, '100.00'))).body.error.code).toBe('insufficient_funds');
    expect((await api.patch(`/v1/accounts/${ngn}/status`, { status: 'frozen' })).status).toBe(200);
    expect((await api.post('/v1/transfers', transfer(ngn, '1.00'))).body.error.code).toBe('account_frozen');
    expect((await api.patch(`/v1/accounts/${other}/status`, { status: 'deleted' })).status).toBe(200);
    expect((await api.patch(`/v1/accounts/${other}/status`, { status: 'active' })).body.error.code).toBe('invalid_state_transition');
    expect((await api.post('/v1/transfers', { amount: 'x' })).status).toBe(400);
    expect((await api.get(`/v1/transfers/${newId()}`)).status).toBe(404);
    expect((await api.get(`/v1/transfers/bulk/${newId()}`)).status).toBe(404);
    expect(undeclaredErrors).toEqual([]);
  });

  it('records and logs an answer whose code the route does not declare', () => {
    const logged: unknown[] = [];
    const request = {
      method: 'GET',
      routeOptions: { url: '/v1/accounts/:account_id', method: 'GET', config: {}, schema: { errors: [] } },
      log: { error: (...args: unknown[]) => logged.push(args) },
    } as unknown as FastifyRequest;
    checkDeclared(request, 'not_found');
    expect(undeclaredErrors).toEqual([]);
    checkDeclared(request, 'insufficient_funds');
    expect(undeclaredErrors).toEqual([{ method: 'GET', url: '/v1/accounts/:account_id', code: 'insufficient_funds' }]);
    expect(logged).toHaveLength(1);
    undeclaredErrors.length = 0; // the suite-wide check (test/declared-errors-setup.ts) must not see this one
  });

  it('a /v1 route that declares no errors stops registration', () => {
    expect(() => assertDeclaresErrors({ method: 'GET', url: '/v1/things', schema: {} })).toThrow(/GET \/v1\/things declares no errors/);
    expect(() => assertDeclaresErrors({ method: 'GET', url: '/v1/things', schema: { errors: [] } })).not.toThrow();
    expect(() => assertDeclaresErrors({ method: 'GET', url: '/v1/openapi.json', schema: { hide: true } })).not.toThrow();
    expect(() => assertDeclaresErrors({ method: 'GET', url: '/dashboard/api/data' })).not.toThrow();
  });

  it('every route can answer the codes of its construction', () => {
    expect(constructionCodes({ method: 'GET', url: '/v1/accounts', hasBody: false })).not.toContain('not_found');
    expect(constructionCodes({ method: 'POST', url: '/v1/transfers', hasBody: true })).toEqual(
      expect.arrayContaining(['missing_idempotency_key', 'payload_too_large', 'unsupported_media_type', 'invalid_json']),
    );
    expect(constructionCodes({ method: 'GET', url: '/v1/currencies', hasBody: false, publicKeyAllowed: true })).not.toContain(
      'secret_key_required',
    );
  });
});
