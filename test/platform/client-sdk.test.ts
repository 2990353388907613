/**
 * Issue #12: the generated TypeScript client (packages/client) drives a whole sandbox flow against
 * the real app listening on a local port, over real HTTP: customer → KYC → account → fund →
 * transfer → a signed webhook at a real local receiver. Only the client talks to the API; the test
 * itself only runs the webhook worker's tick (as the delivery tests do) and reads the receiver.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createClient, type ApiClient, type ErrorCode } from '@fsapi/client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWebhookTick } from '../../src/modules/webhooks/delivery.js';
import { startTestApp, type TestApp } from '../harness.js';
import { startReceiver, until, type Receiver } from '../webhooks/receiver.js';

let t: TestApp;
let rx: Receiver;
let api: ApiClient;
/** Every request the client sent: method, path and the Idempotency-Key it carried. */
const sent: { method: string; path: string; idempotencyKey: string | null }[] = [];

beforeAll(async () => {
  t = await startTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = t.app.server.address() as AddressInfo;
  rx = await startReceiver();
  const business = await t.tenant('Client SDK Ltd');
  api = createClient({
    baseUrl: `http://127.0.0.1:${port}/`,
    apiKey: business.sandbox.secret_key,
    fetch: (request) => {
      sent.push({ method: request.method, path: new URL(request.url).pathname, idempotencyKey: request.headers.get('idempotency-key') });
      return fetch(request);
    },
  });
});
afterAll(async () => {
  await rx?.close();
  await t?.close();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('the generated client', () => {
  it('drives customer → KYC → account → fund → transfer → signed webhook', async () => {
    // A webhook endpoint at the local receiver (sandbox endpoints may point at loopback).
    const endpoint = await api.POST('/v1/webhooks/endpoints', {
      body: { url: rx.url, event_types: ['customer.kyc.status.approved', 'transfer.status.completed'] },
    });
    expect(endpoint.response.status).toBe(201);
    const { id: endpointId, secret } = endpoint.data!.data;
    expect(endpointId).toBeTruthy();

    const customer = await api.POST('/v1/customers', {
      body: {
        type: 'individual',
        first_name: 'Ada',
        last_name: 'Obi',
        email: `ada.obi+${randomUUID().slice(0, 8)}@example.com`,
        phone: '+2348012345678',
        gender: 'female',
        date_of_birth: '1991-04-02',
        address: { address_line1: '12 Marina Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
      },
    });
    expect(customer.error).toBeUndefined();
    const customerId = customer.data!.data.id;

    // Sandbox KYC: the simulation decides at once.
    const kyc = await api.POST('/v1/simulations/kyc/{customer_id}', {
      params: { path: { customer_id: customerId } },
      body: { outcome: 'approved' },
    });
    expect(kyc.error).toBeUndefined();
    expect(kyc.data!.data).toMatchObject({
      customer_id: customerId,
      review_status: 'completed',
      review_result: { review_answer: 'approved' },
    });

    const account = await api.POST('/v1/accounts', { body: { currency: 'NGN', label: 'main', customer_id: customerId } });
    expect(account.error).toBeUndefined();
    const accountId = account.data!.data.id;
    const treasury = await api.POST('/v1/accounts', { body: { currency: 'NGN', label: 'treasury' } });
    const treasuryId = treasury.data!.data.id;

    // Sandbox funding, with an explicit key: the same call again is a replay, not a second deposit.
    const fundKey = `fund-${accountId}`;
    const fund = () =>
      api.POST('/v1/simulations/accounts/{account_id}/fund', {
        params: { path: { account_id: accountId } },
        body: { amount: '1000.00' },
        headers: { 'Idempotency-Key': fundKey },
      });
    const funded = await fund();
    expect(funded.data!.data).toMatchObject({ amount: '1000.00', balance_after: '1000.00', direction: 'in' });
    const replayed = await fund();
    expect(replayed.response.headers.get('idempotency-replayed')).toBe('true');
    expect(replayed.data!.data.id).toBe(funded.data!.data.id);

    const transfer = await api.POST('/v1/transfer', {
      body: {
        source: { id: accountId },
        destination: { destination_type: 'internal_account', id: treasuryId },
        amount: '250.50',
        description: 'first payment',
      },
    });
    expect(transfer.error).toBeUndefined();
    expect(transfer.data!.data).toMatchObject({ transfer_status: 'completed', amount: '250.50', currency: 'NGN' });

    const after = await api.GET('/v1/accounts/{account_id}', { params: { path: { account_id: accountId } } });
    expect(after.data!.data).toMatchObject({ balance: '749.50', available_balance: '749.50' });

    // A file route: its success is typed as text with parseAs (CSV by default).
    const csv = await api.GET('/v1/transactions/export', { params: { query: { account_id: accountId } }, parseAs: 'text' });
    expect(csv.response.headers.get('content-type')).toContain('text/csv');
    expect(csv.data!.trim().split('\n')).toHaveLength(3); // header, the funding, the transfer
    expect(csv.data).toContain('250.50');

    // The webhooks, signed with the endpoint's secret (Standard Webhooks), at the real receiver.
    const types = () => rx.received.map((r) => (JSON.parse(r.body) as { event_type: string }).event_type);
    await until(
      () => types().includes('customer.kyc.status.approved') && types().includes('transfer.status.completed'),
      () =>
        runWebhookTick({ db: t.db, sealer: t.sealer }, { retryDelaysMs: [30, 30, 30], jitter: 0, timeoutMs: 5000, allowLoopback: true }),
    );
    const hook = rx.received.find((r) => r.body.includes('"transfer.status.completed"'))!;
    const payload = new Webhook(secret).verify(hook.body, {
      'webhook-id': String(hook.headers['webhook-id']),
      'webhook-timestamp': String(hook.headers['webhook-timestamp']),
      'webhook-signature': String(hook.headers['webhook-signature']),
    }) as { environment: string; event_data: { id: string; transfer_status: string } };
    expect(payload.environment).toBe('sandbox');
    expect(payload.event_data).toMatchObject({ id: transfer.data!.data.id, transfer_status: 'completed' });

    // Every POST carried an Idempotency-Key: the caller's where given, else a fresh UUID per call.
    const posts = sent.filter((s) => s.method === 'POST');
    expect(posts.length).toBeGreaterThanOrEqual(7);
    const generated = posts.filter((s) => s.idempotencyKey !== fundKey).map((s) => s.idempotencyKey);
    for (const key of generated) expect(key).toMatch(UUID);
    expect(new Set(generated).size).toBe(generated.length);
    expect(posts.filter((s) => s.idempotencyKey === fundKey)).toHaveLength(2);
    expect(sent.filter((s) => s.method === 'GET').every((s) => s.idempotencyKey === null)).toBe(true);
  });

  it('types the error envelope', async () => {
    const bad = await api.POST('/v1/customers', {
      body: {
        type: 'individual',
        first_name: 'No',
        last_name: 'Email',
        email: 'not-an-email',
        phone: '+2348012345678',
        gender: 'other',
        date_of_birth: '1990-01-15',
        address: { address_line1: '1 Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
      },
    });
    expect(bad.data).toBeUndefined();
    expect(bad.response.status).toBe(400);
    // `error` is the union of this operation's error envelopes: its code is one of the closed list.
    const code: ErrorCode | undefined = bad.error?.error.code;
    expect(code).toBe('validation_failed');
    expect(bad.error).toMatchObject({ data: null, error: { request_id: expect.any(String) } });
    expect(bad.error!.error.details.map((d) => d.field)).toContain('email');

    const missing = await api.GET('/v1/accounts/{account_id}', { params: { path: { account_id: randomUUID() } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('not_found');

    const wrongKey = createClient({
      baseUrl: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`,
      apiKey: 'sk_sandbox_nope',
    });
    const unauthorized = await wrongKey.GET('/v1/accounts');
    expect(unauthorized.response.status).toBe(401);
    expect(unauthorized.error?.error.code).toBe('invalid_api_key');
  });
});
