import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { johnDoe, sandboxBusiness, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * Answers a strictly typed client can decode: snake_case keys on our own routes (the KYC
 * simulation included), fields without a value left out instead of sent as "", and every invalid
 * field of a body listed at once, also when the union's discriminator (`type`) is missing.
 */
let t: TestApp;
let api: Client;

beforeAll(async () => {
  t = await startTestApp();
  ({ api } = await sandboxBusiness(t, 'Answers Co'));
});
afterAll(async () => t?.close());

/** Every key of an answer, with its path, and every empty-string value. */
function walk(value: unknown, path = '', out: { keys: string[]; empty: string[] } = { keys: [], empty: [] }) {
  if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}[${i}]`, out));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      out.keys.push(`${path}.${k}`);
      walk(v, `${path}.${k}`, out);
    }
  } else if (value === '') out.empty.push(path);
  return out;
}
const notSnake = (keys: string[]) => keys.filter((k) => !/^[a-z0-9_]+$/.test(k.split('.').pop()!));

describe('consistent answers', () => {
  it('the KYC simulation answers in snake_case', async () => {
    const customer = (await api.post('/v1/customers', johnDoe())).body.data.id;
    const rejected = await api.post(`/v1/simulations/kyc/${customer}`, { outcome: 'rejected' });
    expect(rejected.status).toBe(200);
    expect(rejected.body.data).toMatchObject({
      customer_id: customer,
      review_status: 'completed',
      review_result: { review_answer: 'rejected', review_reject_type: 'RETRY' },
    });
    expect(rejected.body.data.review_result.reject_labels.length).toBeGreaterThan(0);
    expect(notSnake(walk(rejected.body.data).keys)).toEqual([]);
    const approved = await api.post(`/v1/simulations/kyc/${customer}`, { outcome: 'approved' });
    expect(approved.body.data).toMatchObject({ review_status: 'completed', review_result: { review_answer: 'approved' } });
    expect(approved.body.data.review_date).toMatch(/^\d{4}-\d\d-\d\d /);
    expect(notSnake(walk(approved.body.data).keys)).toEqual([]);
  });

  it('leaves out fields without a value instead of sending empty strings', async () => {
    const created = await api.post('/v1/customers', johnDoe());
    expect(created.body.data).not.toHaveProperty('industry_code');
    expect(walk(created.body.data).empty).toEqual([]);
    const fetched = await api.get(`/v1/customers/${created.body.data.id}`);
    expect(fetched.body.data).not.toHaveProperty('industry_code');
    expect(walk(fetched.body.data).empty).toEqual([]);

    const account = await api.post('/v1/accounts', { currency: 'NGN', label: 'main' });
    expect(account.body.data).not.toHaveProperty('tier');
    expect(walk(account.body.data).empty).toEqual([]);
    const list = await api.get('/v1/accounts');
    for (const a of list.body.data.items) expect(a).not.toHaveProperty('tier');
    expect(walk(list.body.data).empty).toEqual([]);
  });

  it('lists every invalid field at once when `type` is missing', async () => {
    const { type: _type, last_name: _last, ...body } = johnDoe({ email: 'not-an-email', gender: 'robot' });
    const res = await api.post('/v1/customers', body);
    expect(res.status).toBe(400);
    const fields = (res.body.error.details as { field: string }[]).map((d) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['type', 'email', 'gender', 'last_name']));
    expect(fields.filter((f) => f === 'type')).toHaveLength(1);

    const unknownType = await api.post('/v1/customers', { ...body, type: 'robot' });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error.details.map((d: { field: string }) => d.field)).toEqual(
      expect.arrayContaining(['type', 'email', 'gender', 'last_name']),
    );

    // A valid type still reports only its own branch's fields, as before.
    const individual = await api.post('/v1/customers', { ...body, type: 'individual' });
    expect(individual.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(['email', 'gender', 'last_name']);
  });

  it('does the same for external accounts without `payee_type`', async () => {
    const customer = (await api.post('/v1/customers', johnDoe())).body.data.id;
    const res = await api.post('/v1/external-accounts', {
      customer_id: customer,
      account_name: 'John Doe',
      iban: 'DE89370400440532013000',
      currency: 'EUR',
      account_owner_type: 'nobody',
      address: { address_line1: '1 Main Street', city: 'Berlin', postal_code: '10115', country: 'DE' },
    });
    expect(res.status).toBe(400);
    const fields = (res.body.error.details as { field: string }[]).map((d) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['payee_type', 'account_owner_type']));
  });
});
