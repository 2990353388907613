import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;

const business = (overrides: Record<string, unknown> = {}) => ({
  type: 'business',
  email: `contact+${Math.random().toString(36).slice(2, 8)}@acmecorp.com`,
  phone: '+12025550173',
  business_name: 'Acme Corporation',
  business_description: 'Technology and software development',
  business_type: 'private_limited',
  business_industry: 'Technology',
  registration_number: 'RC-987654',
  address: { address_line1: '1800 N Pole St', city: 'Orlando', postal_code: '32801', state: 'US-FL', country: 'US' },
  associated_persons: [
    {
      first_name: 'Jane',
      last_name: 'Doe',
      email: 'jane.doe@acmecorp.com',
      date_of_birth: '1990-06-15',
      gender: 'female',
      phone: '+12025550174',
      address: { address_line1: '1800 N Pole St', city: 'Orlando', postal_code: '32801', state: 'US-FL', country: 'US' },
    },
  ],
  ...overrides,
});

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant();
  api = clientFor(t, biz.sandbox.secret_key);
});
afterAll(() => t.close());

describe('POST /v1/customers', () => {
  it('creates the contract example customer (John Doe, NG-LA)', async () => {
    const body = johnDoe({ email: 'john.doe@example.com' });
    const res = await api.post('/v1/customers', body);
    expect(res.status).toBe(200);
    expect(res.body.error).toBeNull();
    const c = res.body.data;
    expect(c.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(c).toMatchObject({
      type: 'individual',
      first_name: 'John',
      middle_name: 'Michael',
      last_name: 'Doe',
      email: 'john.doe@example.com',
      phone: '+2348012345678',
      gender: 'male',
      date_of_birth: '1990-01-15',
      status: 'active',
      kyc: [],
      associated_persons: [],
      address: body.address,
    });
    expect(c.date_added).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('replays a retry with the same Idempotency-Key: same body, no second customer', async () => {
    const body = johnDoe();
    const first = await api.post('/v1/customers', body, { idempotencyKey: 'create-john-1' });
    const again = await api.post('/v1/customers', body, { idempotencyKey: 'create-john-1' });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers['idempotency-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    const list = await api.get(`/v1/customers?email=${encodeURIComponent(body.email)}`);
    expect(list.body.data.total_items).toBe(1);
  });

  it('rejects the same key with a different body: 422 idempotency_key_reused', async () => {
    await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'reuse-1' });
    const res = await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'reuse-1' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('idempotency_key_reused');
  });

  it('does not store a 400: a corrected retry with the same key runs', async () => {
    const bad = await api.post('/v1/customers', johnDoe({ phone: '123' }), { idempotencyKey: 'fix-me' });
    expect(bad.status).toBe(400);
    const good = await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'fix-me' });
    expect(good.status).toBe(200);
  });

  it('reports every invalid field at once and creates nothing', async () => {
    const before = (await api.get('/v1/customers')).body.data.total_items;
    const res = await api.post('/v1/customers', {
      type: 'individual',
      first_name: '',
      last_name: 'Doe',
      email: 'not-an-email',
      phone: '08012345678',
      gender: 'm',
      date_of_birth: '1990-02-30',
      nickname: 'JD',
      address: { address_line1: '12 Marina Road', city: 'Lagos', postal_code: '101001', state: 'US-NY', country: 'NG' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['address.state', 'date_of_birth', 'email', 'first_name', 'gender', 'nickname', 'phone'].sort());
    expect((await api.get('/v1/customers')).body.data.total_items).toBe(before);
  });

  it.each([
    ['a future date of birth', { date_of_birth: '2999-01-01' }, 'date_of_birth'],
    ['a non-date', { date_of_birth: '15/01/1990' }, 'date_of_birth'],
    ['an unknown country', { address: { ...johnDoe().address, country: 'XX' } }, 'address.country'],
    ['a state of another country', { address: { ...johnDoe().address, state: 'GH-AA' } }, 'address.state'],
    ['a state without country prefix', { address: { ...johnDoe().address, state: 'LA' } }, 'address.state'],
    ['a phone without +', { phone: '2348012345678' }, 'phone'],
    ['an impossible phone', { phone: '+234123' }, 'phone'],
    ['a missing last name', { last_name: undefined }, 'last_name'],
    ['a missing address', { address: undefined }, 'address'],
    ['a missing address city', { address: { ...johnDoe().address, city: undefined } }, 'address.city'],
  ])('rejects %s', async (_name, patch, field) => {
    const res = await api.post('/v1/customers', johnDoe(patch));
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  it('rejects an unknown type with a clear message', async () => {
    const res = await api.post('/v1/customers', johnDoe({ type: 'robot' }));
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].field).toBe('type');
  });

  it('creates a business customer with associated persons', async () => {
    const res = await api.post('/v1/customers', business());
    expect(res.status).toBe(200);
    expect(res.body.data.type).toBe('business');
    expect(res.body.data.business_name).toBe('Acme Corporation');
    expect(res.body.data.associated_persons).toHaveLength(1);
    expect(res.body.data.associated_persons[0]).toMatchObject({ first_name: 'Jane', status: 'active' });
  });

  it('validates associated persons and needs at least one', async () => {
    const none = await api.post('/v1/customers', business({ associated_persons: [] }));
    expect(none.status).toBe(400);
    expect(none.body.error.details[0].field).toBe('associated_persons');
    const bad = await api.post(
      '/v1/customers',
      business({ associated_persons: [{ ...business().associated_persons[0], phone: 'x', date_of_birth: '2999-01-01' }] }),
    );
    expect(bad.status).toBe(400);
    const fields = bad.body.error.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['associated_persons.0.phone', 'associated_persons.0.date_of_birth']));
  });

  it('answers 409 customer_exists for a second customer with the same email', async () => {
    const body = johnDoe();
    expect((await api.post('/v1/customers', body)).status).toBe(200);
    const dup = await api.post('/v1/customers', { ...body, email: body.email.toUpperCase() });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('customer_exists');
  });

  it('rejects malformed JSON, other content types and oversized bodies', async () => {
    const malformed = await api.post('/v1/customers', '{"first_name": ', {});
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.code).toBe('invalid_json');
    const form = await api.post('/v1/customers', 'a=b', { headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(form.status).toBe(415);
    expect(form.body.error.code).toBe('unsupported_media_type');
    const huge = await api.post('/v1/customers', { ...johnDoe(), first_name: 'x'.repeat(1024 * 1024 + 10) });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('payload_too_large');
  });

  it('rejects a bad Idempotency-Key', async () => {
    const res = await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'bad\u0007key' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_idempotency_key');
    const long = await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'k'.repeat(256) });
    expect(long.body.error.code).toBe('invalid_idempotency_key');
  });
});

describe('GET /v1/customers', () => {
  it('paginates newest first with exact totals and a cursor', async () => {
    const other = await t.tenant();
    const own = clientFor(t, other.sandbox.secret_key);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await own.post('/v1/customers', johnDoe())).body.data.id);
    const page1 = await own.get('/v1/customers?items_per_page=2');
    expect(page1.status).toBe(200);
    expect(page1.body.data).toMatchObject({ page: 1, items_per_page: 2, total_items: 5, total_pages: 3 });
    expect(page1.body.data.items.map((c: { id: string }) => c.id)).toEqual([ids[4], ids[3]]);
    const page3 = await own.get('/v1/customers?items_per_page=2&page=3');
    expect(page3.body.data.items.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
    expect(page3.body.data.next_cursor).toBeNull();
    const next = await own.get(`/v1/customers?items_per_page=2&cursor=${page1.body.data.next_cursor}`);
    expect(next.body.data.items.map((c: { id: string }) => c.id)).toEqual([ids[2], ids[1]]);
    const oldest = await own.get('/v1/customers?items_per_page=1&sort=created_at%20ASC');
    expect(oldest.body.data.items[0].id).toBe(ids[0]);
  });

  it('filters by type, email, keyword and date', async () => {
    const other = await t.tenant();
    const own = clientFor(t, other.sandbox.secret_key);
    await own.post('/v1/customers', johnDoe({ first_name: 'Zebulon' }));
    await own.post('/v1/customers', business());
    expect((await own.get('/v1/customers?type=business')).body.data.total_items).toBe(1);
    expect((await own.get('/v1/customers?keyword=zebu')).body.data.total_items).toBe(1);
    expect((await own.get('/v1/customers?keyword=nobody')).body.data.total_items).toBe(0);
    expect((await own.get('/v1/customers?from=2000-01-01')).body.data.total_items).toBe(2);
    expect((await own.get('/v1/customers?to=2000-01-01')).body.data.total_items).toBe(0);
    expect((await own.get('/v1/customers?kyc_status=not_started')).body.data.total_items).toBe(2);
  });

  it('rejects bad filters with 400', async () => {
    for (const q of ['page=0', 'items_per_page=101', 'type=robot', 'from=yesterday', 'cursor=abc', 'from=2024-02-30', 'sort=name']) {
      const res = await api.get(`/v1/customers?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });
});

describe('GET and PUT /v1/customers/{id}', () => {
  it('gets one customer and 404s for unknown, other-business and other-environment ids', async () => {
    const created = (await api.post('/v1/customers', johnDoe())).body.data;
    const res = await api.get(`/v1/customers/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(created.id);
    const live = clientFor(t, biz.live.secret_key);
    expect((await live.get(`/v1/customers/${created.id}`)).status).toBe(404);
    const stranger = clientFor(t, (await t.tenant()).sandbox.secret_key);
    const other = await stranger.get(`/v1/customers/${created.id}`);
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe('not_found');
    expect((await stranger.put(`/v1/customers/${created.id}`, { first_name: 'X' })).status).toBe(404);
    expect((await api.get('/v1/customers/not-a-uuid')).status).toBe(400);
  });

  it('updates only the fields sent', async () => {
    const created = (await api.post('/v1/customers', johnDoe())).body.data;
    const res = await api.put(`/v1/customers/${created.id}`, { customer_id: created.id, last_name: 'Smith', phone: '+2348012345679' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ message: 'customer updated successfully', status: true });
    const after = (await api.get(`/v1/customers/${created.id}`)).body.data;
    expect(after).toMatchObject({ first_name: 'John', last_name: 'Smith', phone: '+2348012345679', email: created.email });
  });

  it('lets the path win: a different id in the body is 400', async () => {
    const a = (await api.post('/v1/customers', johnDoe())).body.data;
    const b = (await api.post('/v1/customers', johnDoe())).body.data;
    const res = await api.put(`/v1/customers/${a.id}`, { customer_id: b.id, first_name: 'Hacker' });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].field).toBe('customer_id');
    expect((await api.get(`/v1/customers/${b.id}`)).body.data.first_name).toBe('John');
  });

  it('validates updates and refuses fields of the other customer type', async () => {
    const c = (await api.post('/v1/customers', johnDoe())).body.data;
    const res = await api.put(`/v1/customers/${c.id}`, {
      email: 'bad',
      business_name: 'X',
      address: { ...johnDoe().address, state: 'US-NY' },
    });
    expect(res.status).toBe(400);
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['address.state', 'email']);
    const wrongType = await api.put(`/v1/customers/${c.id}`, { business_name: 'X' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.details[0]).toMatchObject({ field: 'business_name', code: 'not_allowed' });
  });

  it('updates and adds associated persons of a business', async () => {
    const b = (await api.post('/v1/customers', business())).body.data;
    const personId = b.associated_persons[0].id;
    const incomplete = await api.put(`/v1/customers/${b.id}`, { associated_persons: [{ first_name: 'Only' }] });
    expect(incomplete.status).toBe(400);
    const res = await api.put(`/v1/customers/${b.id}`, {
      business_name: 'Acme Corp Ltd',
      associated_persons: [{ id: personId, last_name: 'Smith' }, business().associated_persons[0]],
    });
    expect(res.status).toBe(200);
    const after = (await api.get(`/v1/customers/${b.id}`)).body.data;
    expect(after.business_name).toBe('Acme Corp Ltd');
    expect(after.associated_persons).toHaveLength(2);
    expect(after.associated_persons.find((p: { id: string }) => p.id === personId).last_name).toBe('Smith');
  });

  it('writes customer.created to the outbox in the same transaction', async () => {
    const c = (await api.post('/v1/customers', johnDoe())).body.data;
    const events = await t.db
      .selectFrom('events')
      .select(['event_type', eventEnvelope().as('payload')])
      .where('event_group_id', '=', c.id)
      .execute();
    expect(events).toHaveLength(1);
    expect(events[0]!.event_type).toBe('customer.created');
    expect(events[0]!.payload).toMatchObject({ tenant_id: biz.tenant_id, environment: 'sandbox', event_data: { id: c.id } });
  });
});
