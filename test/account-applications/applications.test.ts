import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let api: Client;
let other: Client;
let live: Client;

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await t.tenant('Acme Ltd');
  api = clientFor(t, tenant.sandbox.secret_key);
  live = clientFor(t, tenant.live.secret_key);
  other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
});
afterAll(async () => t?.close());

const data = (extra: Record<string, unknown> = {}) => ({
  individual: { first_name: 'John', last_name: 'Doe' },
  account_type: 'regular',
  currency: 'USD',
  label: 'main',
  blockchain_network: 'polygon',
  ...extra,
});

async function draft(lastName = 'Doe') {
  const customer = (await api.post('/v1/customers', johnDoe({ last_name: lastName }))).body.data.id;
  const res = await api.post('/v1/accounts/applications', { customer_id: customer, application_type: 'individual', data: data() });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('account applications', () => {
  it('goes draft -> submitted -> processing -> approved and opens the account', async () => {
    const app = await draft();
    expect(app.status).toBe('draft');
    expect((await api.post('/v1/accounts/applications/tos', { application_id: app.id, agreement_id: 'agr_1' })).status).toBe(200);
    const updated = await api.put(`/v1/accounts/applications/${app.id}`, { data: data({ label: 'savings pot', account_type: 'savings' }) });
    expect(updated.body.data.data.label).toBe('savings pot');
    const submitted = await api.post(`/v1/accounts/applications/${app.id}/submit`);
    expect(submitted.body.data).toMatchObject({ status: 'submitted' });
    expect((await api.get('/v1/accounts/applications/pending')).body.data.count).toBe(1);
    const processed = await api.post(`/v1/accounts/applications/${app.id}/process`);
    expect(processed.body.data).toMatchObject({ status: 'approved', errors: [] });
    expect(processed.body.data.account).toMatchObject({
      currency: 'USD',
      type: 'savings',
      label: 'savings pot',
      customer_id: app.customer_id,
    });
    const history = (await api.get(`/v1/accounts/applications/${app.id}/history`)).body.data.history.map(
      (h: { action: string }) => h.action,
    );
    expect(history).toEqual(['created', 'tos_accepted', 'updated', 'submitted', 'processing', 'approved']);
    // Terminal: no more changes.
    expect((await api.post(`/v1/accounts/applications/${app.id}/process`)).body.error.code).toBe('invalid_state_transition');
    expect((await api.put(`/v1/accounts/applications/${app.id}`, { data: data() })).status).toBe(409);
    expect((await api.delete(`/v1/accounts/applications/${app.id}`)).status).toBe(409);
  });

  it('rejects and sends to manual review with the sandbox magic names', async () => {
    const rejected = await draft('Reject');
    const res = await api.post(`/v1/accounts/applications/${rejected.id}/submit-and-process`);
    expect(res.body.data).toMatchObject({ processing_result: { status: 'rejected', account: null }, is_fully_processed: true });
    const review = await draft('Review');
    const r2 = await api.post(`/v1/accounts/applications/${review.id}/submit-and-process`);
    expect(r2.body.data).toMatchObject({ application: { status: 'manual_review' }, is_fully_processed: false });
    expect((await api.delete(`/v1/accounts/applications/${rejected.id}`)).body.data.success).toBe(true);
    expect((await api.get(`/v1/accounts/applications/${rejected.id}`)).status).toBe(404);
  });

  it('validates, lists, and isolates', async () => {
    const v = await api.post('/v1/accounts/applications/validate', { application_type: 'business', data: data({ currency: 'JPY' }) });
    expect(v.body.data.valid).toBe(false);
    expect(v.body.data.validation_errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'data.business',
      'data.currency',
      'data.individual',
    ]);
    expect((await api.post('/v1/accounts/applications/validate', { application_type: 'individual', data: data() })).body.data.valid).toBe(
      true,
    );
    expect(
      (
        await api.post('/v1/accounts/applications', {
          customer_id: '0190e7a0-0000-7000-8000-000000000000',
          application_type: 'individual',
          data: data(),
        })
      ).status,
    ).toBe(404);
    expect((await api.post('/v1/accounts/applications', { application_type: 'individual', data: data() })).status).toBe(400);
    const app = await draft();
    await api.put(`/v1/accounts/applications/${app.id}`, { data: data({ currency: 'JPY' }) });
    const bad = await api.post(`/v1/accounts/applications/${app.id}/submit`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('data.currency');
    expect((await api.post(`/v1/accounts/applications/${app.id}/process`)).status).toBe(409);
    expect((await api.get('/v1/accounts/applications?status=draft')).body.data.items.map((a: { id: string }) => a.id)).toContain(app.id);
    expect((await api.get('/v1/accounts/applications?status=nope')).status).toBe(400);
    expect((await other.get(`/v1/accounts/applications/${app.id}`)).status).toBe(404);
    expect((await live.get(`/v1/accounts/applications/${app.id}`)).status).toBe(404);
    expect((await other.post(`/v1/accounts/applications/${app.id}/submit`)).status).toBe(404);
    expect((await other.get(`/v1/accounts/applications/${app.id}/history`)).status).toBe(404);
  });
});
