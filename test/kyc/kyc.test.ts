import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { certificate, createCustomer, passport, PDF_B64, PNG_B64, selfie, verify, business } from '../kyc-helpers.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;
let live: Client;
let other: Client;

beforeAll(async () => {
  t = await startTestApp({ PUBLIC_BASE_URL: 'https://verify.example.test' });
  biz = await t.tenant('KYC Co');
  api = clientFor(t, biz.sandbox.secret_key);
  live = clientFor(t, biz.live.secret_key);
  other = clientFor(t, (await t.tenant('Other Co')).sandbox.secret_key);
});
afterAll(() => t.close());

/** A fresh business, so duplicate-identity checks never see other tests' John Does. */
async function freshApi(): Promise<Client> {
  return clientFor(t, (await t.tenant('Fresh Co')).sandbox.secret_key);
}

async function events(type: string, customerId: string) {
  const rows = await t.db
    .selectFrom('events')
    .select(['event_type', eventEnvelope().as('payload')])
    .where('event_group_id', '=', customerId)
    .where('event_type', '=', type)
    .execute();
  return rows;
}

describe('POST /v1/customers/kyc/start', () => {
  it('starts basic KYC and returns the hosted page link; alias path is the same operation', async () => {
    const id = await createCustomer(api, johnDoe());
    const res = await api.post('/v1/customers/kyc/start', { customer_id: id }, { idempotencyKey: `start-${id}` });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'success', review_status: 'init', kyc_level: 'basic' });
    expect(res.body.data.web_url).toMatch(/^https:\/\/verify\.example\.test\/kyc\/verify\/[0-9A-Za-z]{43}$/);
    const alias = await api.post('/v1/risk/start-kyc', { customer_id: id }, { idempotencyKey: `start-${id}` });
    expect(alias.status).toBe(200);
    expect(alias.headers['idempotency-replayed']).toBe('true');
    expect(alias.body.data.web_url).toBe(res.body.data.web_url);
    const customer = await api.get(`/v1/customers/${id}`);
    expect(customer.body.data.kyc_status).toBe('init');
    expect(customer.body.data.kyc).toEqual([expect.objectContaining({ type: 'basic', status: 'init', verified_at: null })]);
    const inter = await api.post('/v1/risk/start-kyc', { customer_id: id, kyc_level: 'intermediate' });
    expect(inter.body.data.kyc_level).toBe('intermediate');
  });

  it('validates the body and hides other businesses and environments', async () => {
    const id = await createCustomer(api, johnDoe());
    expect((await api.post('/v1/customers/kyc/start', { customer_id: id, kyc_level: 'advanced' })).body.error.code).toBe(
      'validation_failed',
    );
    const unknown = await api.post('/v1/customers/kyc/start', { customer_id: id, level: 'basic' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details[0]).toMatchObject({ field: 'level', code: 'unknown_field' });
    expect((await api.post('/v1/customers/kyc/start', { customer_id: 'nope' })).status).toBe(400);
    expect((await other.post('/v1/customers/kyc/start', { customer_id: id })).status).toBe(404);
    expect((await live.post('/v1/customers/kyc/start', { customer_id: id })).status).toBe(404);
  });
});

describe('POST /v1/customers/kyc/upload-document', () => {
  it('stores PNG, JPEG and PDF documents recognised by content', async () => {
    const id = await createCustomer(api, johnDoe());
    const res = await api.post('/v1/customers/kyc/upload-document', passport(id));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      status: 'success',
      customer_id: id,
      document_type: 'PASSPORT',
      country: 'NGA',
      content_type: 'image/png',
    });
    const s = await api.post('/v1/risk/upload-document', selfie(id));
    expect(s.body.data.content_type).toBe('image/jpeg');
    const row = await t.db
      .selectFrom('kyc_documents')
      .select(['content', 'sha256', 'size_bytes'])
      .where('id', '=', res.body.data.document_id)
      .executeTakeFirstOrThrow();
    expect(Buffer.from(row.content).equals(Buffer.from(PNG_B64, 'base64'))).toBe(true);
  });

  it('rejects bad content, names, types and sizes with clear 4xx', async () => {
    const id = await createCustomer(api, johnDoe());
    const cases: [Record<string, unknown>, number, string][] = [
      [passport(id, { content: 'not base64!' }), 400, 'content'],
      [passport(id, { content: Buffer.from('MZ\x90\x00 executable').toString('base64') }), 400, 'content'],
      [passport(id, { filename: 'passport.exe' }), 400, 'filename'],
      [{ ...selfie(id), content: PDF_B64, filename: 'selfie.pdf' }, 400, 'content'],
      [passport(id, { metadata: { idDocType: 'PASSPORT', country: 'NG' } }), 400, 'metadata.country'],
      [passport(id, { metadata: { idDocType: 'VISA', country: 'NGA' } }), 400, 'metadata.idDocType'],
      [passport(id, { metadata: { idDocType: 'REGISTRATION_CERTIFICATE', country: 'NGA' } }), 400, 'metadata.idDocType'],
      [passport(id, { metadata: { idDocType: 'PASSPORT', country: 'NGA', validUntil: '2001-01-01' } }), 400, 'metadata.validUntil'],
      [passport(id, { metadata: { idDocType: 'SELFIE', idDocSubType: 'BACK_SIDE', country: 'NGA' } }), 400, 'metadata.idDocSubType'],
      [passport(id, { extra: 1 }), 400, 'extra'],
    ];
    for (const [body, status, field] of cases) {
      const res = await api.post('/v1/customers/kyc/upload-document', body);
      expect(res.status, JSON.stringify(body.metadata) + field).toBe(status);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    expect((await other.post('/v1/customers/kyc/upload-document', passport(id))).status).toBe(404);
    const count = await t.db
      .selectFrom('kyc_documents')
      .select(t.db.fn.countAll().as('n'))
      .where('customer_id', '=', id)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });

  it('decides the type from the content: a PNG named .pdf or .jpg is stored as image/png (docs/api-rules.md#reference-examples)', async () => {
    const id = await createCustomer(api, johnDoe());
    for (const filename of ['passport.pdf', 'passport_front.jpg']) {
      const res = await api.post('/v1/customers/kyc/upload-document', passport(id, { filename }));
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.content_type).toBe('image/png');
    }
  });

  it('accepts the older /v1/risk spelling: lower-case idDocType, return_doc_warnings, a FRONT_SIDE selfie', async () => {
    const id = await createCustomer(api, johnDoe());
    const res = await api.post('/v1/risk/upload-document', {
      ...passport(id, { metadata: { idDocType: 'passport', idDocSubType: 'FRONT_SIDE', country: 'NGA', validUntil: '2035-01-15' } }),
      return_doc_warnings: true,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ document_type: 'passport', document_sub_type: 'FRONT_SIDE' });
    const selfieRes = await api.post('/v1/risk/upload-document', {
      ...selfie(id),
      metadata: { idDocType: 'selfie', idDocSubType: 'FRONT_SIDE', country: 'NGA' },
    });
    expect(selfieRes.status, selfieRes.text).toBe(200);
    const submitted = await api.post('/v1/risk/start-kyc-s2s', { customer_id: id });
    expect(submitted.status, submitted.text).toBe(200);
    expect(submitted.body.data).toMatchObject({ status: 'success', applicant_id: expect.any(String) });
  });

  it('allows a 15 MiB body on this route only and refuses a decoded file above 10 MB', async () => {
    const id = await createCustomer(api, johnDoe());
    const big = Buffer.alloc(10 * 1024 * 1024 + 1, 0);
    Buffer.from(PNG_B64, 'base64').copy(big);
    const tooBig = await api.post('/v1/customers/kyc/upload-document', passport(id, { content: big.toString('base64') }));
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe('payload_too_large');
    const atLimit = await api.post(
      '/v1/customers/kyc/upload-document',
      passport(id, { content: big.subarray(0, 10 * 1024 * 1024).toString('base64') }),
    );
    expect(atLimit.status).toBe(200);
    expect(atLimit.body.data.size_bytes).toBe(10 * 1024 * 1024);
    const huge = await api.post('/v1/customers/kyc/upload-document', passport(id, { content: 'A'.repeat(16 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    const elsewhere = await api.post('/v1/customers', { ...johnDoe(), first_name: 'x'.repeat(2 * 1024 * 1024) });
    expect(elsewhere.status).toBe(413);
    const broken = await api.post('/v1/customers/kyc/upload-document', '{"customer_id":');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_json');
    const text = await api.post('/v1/customers/kyc/upload-document', 'hello', { headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
  });
});

describe('GET /v1/customers/{id}/kyc/documents', () => {
  it('lists metadata only, newest first, paginated', async () => {
    const id = await createCustomer(api, johnDoe());
    await api.post(
      '/v1/customers/kyc/upload-document',
      passport(id, {
        metadata: {
          idDocType: 'PASSPORT',
          idDocSubType: 'FRONT_SIDE',
          country: 'NGA',
          number: 'A111',
          issuedDate: '2020-01-01',
          validUntil: '2030-01-01',
        },
      }),
    );
    await api.post('/v1/customers/kyc/upload-document', selfie(id));
    const res = await api.get(`/v1/customers/${id}/kyc/documents?items_per_page=1`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ customer_id: id, count: 1, total_items: 2, total_pages: 2 });
    expect(res.body.data.documents[0]).toMatchObject({ IDType: 'SELFIE', has_front_image: true });
    expect(res.text).not.toContain(PNG_B64.slice(0, 20));
    const next = await api.get(`/v1/customers/${id}/kyc/documents?items_per_page=1&cursor=${res.body.data.next_cursor}`);
    expect(next.body.data.documents[0]).toMatchObject({
      IDType: 'PASSPORT',
      IDNumber: 'A111',
      IssuingCountry: 'NGA',
      IssuedDate: '2020-01-01',
      ExpiryDate: '2030-01-01',
      OriginalFilename: 'passport_front.png',
    });
    expect((await other.get(`/v1/customers/${id}/kyc/documents`)).status).toBe(404);
    expect((await live.get(`/v1/customers/${id}/kyc/documents`)).status).toBe(404);
    expect((await api.get(`/v1/customers/${id}/kyc/documents?items_per_page=0`)).status).toBe(400);
  });
});

describe('POST /v1/customers/kyc/start-s2s and status', () => {
  it('lists each missing document (412), then approves once documents are in', async () => {
    const a = await freshApi();
    const id = await createCustomer(a, johnDoe());
    expect((await a.get(`/v1/customers/${id}/kyc/status`)).status).toBe(404);
    const none = await a.post('/v1/customers/kyc/start-s2s', { customer_id: id });
    expect(none.status).toBe(412);
    expect(none.body.error.code).toBe('missing_documents');
    expect(none.body.error.details.map((d: { field: string }) => d.field)).toEqual(['id_document', 'selfie']);
    await a.post('/v1/customers/kyc/upload-document', passport(id));
    const one = await a.post('/v1/risk/start-kyc-s2s', { customer_id: id });
    expect(one.body.error.details.map((d: { field: string }) => d.field)).toEqual(['selfie']);
    await a.post('/v1/customers/kyc/upload-document', selfie(id));
    const ok = await a.post('/v1/customers/kyc/start-s2s', { customer_id: id });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ status: 'pending', kyc_level: 'basic' });
    const status = await a.get(`/v1/customers/${id}/kyc/status`);
    expect(status.body.data).toMatchObject({ reviewStatus: 'completed', reviewResult: { reviewAnswer: 'approved' }, priority: 0 });
    expect(status.body.data.reviewDate).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+0000$/);
    const customer = await a.get(`/v1/customers/${id}`);
    expect(customer.body.data.kyc_status).toBe('approved');
    expect(customer.body.data.kyc[0].verified_at).not.toBeNull();
    expect(await events('customer.kyc.status.pending', id)).toHaveLength(1);
    expect(await events('customer.kyc.status.approved', id)).toHaveLength(1);
    for (const path of ['/v1/customers/kyc/start', '/v1/customers/kyc/start-s2s']) {
      const again = await a.post(path, { customer_id: id });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('kyc_already_completed');
    }
    expect((await a.get(`/v1/customers/${id}/kyc/status?level=intermediate`)).status).toBe(404);
    const inter = await a.post('/v1/customers/kyc/start-s2s', { customer_id: id, kyc_level: 'intermediate' });
    expect(inter.status).toBe(412);
    expect(inter.body.error.details.map((d: { field: string }) => d.field)).toEqual(['proof_of_address']);
    const poa = { customer_id: id, metadata: { idDocType: 'PROOF_OF_ADDRESS', country: 'NGA' }, content: PDF_B64, filename: 'bill.pdf' };
    expect((await a.post('/v1/customers/kyc/upload-document', poa)).status).toBe(200);
    expect((await a.post('/v1/customers/kyc/start-s2s', { customer_id: id, kyc_level: 'intermediate' })).status).toBe(200);
    expect((await a.get(`/v1/customers/${id}/kyc/status?level=intermediate`)).body.data.reviewResult.reviewAnswer).toBe('approved');
    expect(
      (await a.get(`/v1/customers/${id}`)).body.data.kyc.map((k: { type: string; status: string }) => `${k.type}:${k.status}`).sort(),
    ).toEqual(['basic:approved', 'intermediate:approved']);
    const late = await a.post('/v1/customers/kyc/upload-document', selfie(id));
    expect(late.status).toBe(409);
    expect(late.body.error.code).toBe('kyc_already_completed');
  });

  it('rejects last name Reject with labels, and a retry can start again', async () => {
    const a = await freshApi();
    const id = await createCustomer(a, johnDoe({ last_name: 'Reject' }));
    expect((await verify(a, id)).status).toBe(200);
    const status = await a.get(`/v1/customers/${id}/kyc/status`);
    expect(status.body.data.reviewStatus).toBe('completed');
    expect(status.body.data.reviewResult.reviewAnswer).toBe('rejected');
    expect(status.body.data.reviewResult.rejectLabels.length).toBeGreaterThan(0);
    expect(status.body.data.reviewResult.reviewRejectType).toBe('RETRY');
    expect((await a.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe('rejected');
    expect(await events('customer.kyc.status.rejected', id)).toHaveLength(1);
    const restart = await a.post('/v1/customers/kyc/start', { customer_id: id });
    expect(restart.body.data.review_status).toBe('init');
    expect((await a.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe('init');
  });

  it('sends last name Review to manual review, shown as pending', async () => {
    const a = await freshApi();
    const id = await createCustomer(a, johnDoe({ last_name: 'Review' }));
    await verify(a, id);
    const status = await a.get(`/v1/customers/${id}/kyc/status`);
    expect(status.body.data).toMatchObject({ reviewStatus: 'pending', review_reason: 'manual_review' });
    expect(status.body.data.reviewResult).toBeUndefined();
    expect((await a.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe('manual_review');
    expect(await events('customer.kyc.status.manual_review', id)).toHaveLength(1);
    const again = await a.post('/v1/customers/kyc/start-s2s', { customer_id: id });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invalid_state_transition');
  });

  it('passes a business only when every associated person passes', async () => {
    const a = await freshApi();
    const person = (last: string) => ({
      ...johnDoe({ last_name: last, first_name: `P${last}` }),
      type: undefined,
      email: `${last.toLowerCase()}@example.com`,
    });
    const strip = (p: Record<string, unknown>) => Object.fromEntries(Object.entries(p).filter(([k, v]) => k !== 'type' && v !== undefined));
    const good = await createCustomer(a, business([strip(person('Okafor')), strip(person('Bello'))]));
    expect((await a.post('/v1/customers/kyc/upload-document', passport(good))).status).toBe(400);
    const missing = await a.post('/v1/customers/kyc/start-s2s', { customer_id: good });
    expect(missing.body.error.details.map((d: { field: string }) => d.field)).toEqual(['registration_certificate']);
    await a.post('/v1/customers/kyc/upload-document', certificate(good));
    expect((await a.post('/v1/customers/kyc/start-s2s', { customer_id: good })).status).toBe(200);
    const approved = await a.get(`/v1/customers/${good}`);
    expect(approved.body.data.kyc_status).toBe('approved');
    expect(approved.body.data.associated_persons.map((p: { kyc_status: string }) => p.kyc_status)).toEqual(['approved', 'approved']);

    const bad = await createCustomer(a, business([strip(person('Okafor')), strip(person('Reject'))]));
    await a.post('/v1/customers/kyc/upload-document', certificate(bad));
    await a.post('/v1/customers/kyc/start-s2s', { customer_id: bad });
    const rejected = await a.get(`/v1/customers/${bad}/kyc/status`);
    expect(rejected.body.data.reviewResult.rejectLabels).toContain('ASSOCIATED_PERSON_REJECTED');
    const persons = (await a.get(`/v1/customers/${bad}`)).body.data.associated_persons.map((p: { kyc_status: string }) => p.kyc_status);
    expect(persons).toEqual(['approved', 'rejected']);

    const review = await createCustomer(a, business([strip(person('Review'))]));
    await a.post('/v1/customers/kyc/upload-document', certificate(review));
    await a.post('/v1/customers/kyc/start-s2s', { customer_id: review });
    expect((await a.get(`/v1/customers/${review}/kyc/status`)).body.data.review_reason).toBe('manual_review');
  });

  it('hides status of other businesses and environments', async () => {
    const id = await createCustomer(api, johnDoe());
    await api.post('/v1/customers/kyc/start', { customer_id: id });
    expect((await api.get(`/v1/customers/${id}/kyc/status`)).body.data.reviewStatus).toBe('init');
    expect((await other.get(`/v1/customers/${id}/kyc/status`)).status).toBe(404);
    expect((await live.get(`/v1/customers/${id}/kyc/status`)).status).toBe(404);
    expect((await other.post('/v1/customers/kyc/start-s2s', { customer_id: id })).status).toBe(404);
  });
});

describe('POST /v1/simulations/kyc/{customer_id}', () => {
  it('forces each outcome in sandbox and is 404 with a live key', async () => {
    const id = await createCustomer(api, johnDoe());
    for (const outcome of ['manual_review', 'rejected', 'approved'] as const) {
      const res = await api.post(`/v1/simulations/kyc/${id}`, { outcome });
      expect(res.status).toBe(200);
      expect((await api.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe(outcome);
      expect(await events(`customer.kyc.status.${outcome}`, id)).toHaveLength(1);
    }
    const inter = await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved', level: 'intermediate' });
    expect(inter.body.data).toMatchObject({ kyc_level: 'intermediate', review_status: 'completed' });
    expect((await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'maybe' })).status).toBe(400);
    expect((await live.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved' })).status).toBe(404);
    expect((await other.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved' })).status).toBe(404);
  });
});

describe('concurrency', () => {
  it('parallel submissions decide a case exactly once', async () => {
    const a = await freshApi();
    const id = await createCustomer(a, johnDoe());
    await a.post('/v1/customers/kyc/upload-document', passport(id));
    await a.post('/v1/customers/kyc/upload-document', selfie(id));
    const results = await Promise.all(Array.from({ length: 5 }, () => a.post('/v1/customers/kyc/start-s2s', { customer_id: id })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expect(r.body.error.code).toBe('kyc_already_completed');
    expect(await events('customer.kyc.status.approved', id)).toHaveLength(1);
    const activations = await Promise.all(
      Array.from({ length: 4 }, () =>
        a.post('/v1/risk/features/activate', {
          customer_id: id,
          feature_id: 'virtual_cards',
          provider_data: { annual_remuneration: 1, estimated_monthly_limit: 1, ip_address: '::1' },
        }),
      ),
    );
    expect(activations.every((r) => r.status === 200)).toBe(true);
    expect(await events('feature.activated', id)).toHaveLength(1);
  });
});
