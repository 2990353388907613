import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { createCustomer, verify } from '../kyc-helpers.js';
import { checkTransactionLimit, requireAccountCurrency, requireFeature, requireKycLevel } from '../../src/modules/features/service.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { isError } from '../errors-helper.js';
import { eventEnvelope } from '../../src/modules/webhooks/outbox.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;
let other: Client;
let live: Client;

const CARD_DATA = { annual_remuneration: 12000, estimated_monthly_limit: '200.50', ip_address: '12.23.31.23' };

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant('Features Co');
  api = clientFor(t, biz.sandbox.secret_key);
  other = clientFor(t, (await t.tenant('Other Co')).sandbox.secret_key);
  live = clientFor(t, biz.live.secret_key);
});
afterAll(() => t.close());

const ctxOf = (settings: Record<string, unknown> = {}) => ({ tenantId: biz.tenant_id, environment: 'sandbox' as const, settings });

describe('GET /v1/risk/features', () => {
  it('lists the catalogue with requirements: reference ids minus crypto, physical cards, non-home currency accounts', async () => {
    const res = await api.get('/v1/risk/features');
    expect(res.status).toBe(200);
    const ids = res.body.data.features.map((f: { feature_id: string }) => f.feature_id);
    for (const id of [
      'virtual_cards',
      'physical_cards',
      'international_transfers',
      'eur_account',
      'usd_account',
      'gbp_account',
      'ghs_account',
      'kes_account',
    ]) {
      expect(ids).toContain(id);
    }
    expect(ids).not.toContain('crypto_wallet');
    expect(ids).not.toContain('ngn_account');
    const cards = res.body.data.features.find((f: { feature_id: string }) => f.feature_id === 'virtual_cards');
    expect(cards).toMatchObject({ activated: false, status: 'inactive' });
    expect(cards.requirements.map((r: { required: string }) => r.required)).toEqual([
      'basic',
      'annual_remuneration',
      'estimated_monthly_limit',
      'ip_address',
    ]);
    expect(res.body.data).not.toHaveProperty('customer_id');
  });

  it('filters by country and status, validates filters and hides other businesses', async () => {
    expect((await api.get('/v1/risk/features?country=AF')).body.data.features).toEqual([]);
    expect((await api.get('/v1/risk/features?country=NG')).body.data.features.length).toBeGreaterThan(5);
    expect((await api.get('/v1/risk/features?country=XX')).status).toBe(400);
    expect((await api.get('/v1/risk/features?status=maybe')).status).toBe(400);
    const id = await createCustomer(api, johnDoe());
    expect((await api.get(`/v1/risk/features?customer_id=${id}&status=active`)).body.data.features).toEqual([]);
    expect((await other.get(`/v1/risk/features?customer_id=${id}`)).status).toBe(404);
    expect((await live.get(`/v1/risk/features?customer_id=${id}`)).status).toBe(404);
  });
});

describe('eligibility and activation', () => {
  it('takes a customer from created to verified to an active feature, and the gates follow', async () => {
    const a = clientFor(t, (await t.tenant('Journey Co')).sandbox.secret_key);
    const id = await createCustomer(a, johnDoe());
    const before = await a.post('/v1/risk/features/eligibility', { feature_id: 'virtual_cards', customer_id: id });
    expect(before.status).toBe(200);
    expect(before.body.data.eligible).toBe(false);
    const pending = before.body.data.requirements_pending;
    expect(pending.map((p: { type: string; required: string }) => `${p.type}:${p.required}`)).toEqual([
      'document:id_document',
      'document:selfie',
      'kyc_status:basic',
      'provider_data:annual_remuneration',
      'provider_data:estimated_monthly_limit',
      'provider_data:ip_address',
    ]);
    expect(pending[2].action).toMatchObject({ type: 'kyc_verification', url: '/v1/customers/kyc/start', method: 'POST' });
    expect(pending[3].action).toMatchObject({ type: 'provider_data', data_key: 'annual_remuneration', field_type: 'number' });

    const noKyc = await a.post('/v1/risk/features/activate', { feature_id: 'virtual_cards', customer_id: id, provider_data: CARD_DATA });
    expect(noKyc.status).toBe(403);
    expect(noKyc.body.error.code).toBe('kyc_level_insufficient');

    await verify(a, id);
    const after = await a.post('/v1/risk/features/eligibility', { feature_id: 'virtual_cards', customer_id: id, provider_data: CARD_DATA });
    expect(after.body.data.eligible).toBe(true);
    expect(after.body.data.requirements_pending).toEqual([]);
    expect(after.body.data.requirements_fulfilled[0]).toMatchObject({ type: 'kyc_status', value: 'completed' });

    const aCtx = {
      tenantId: (await t.db.selectFrom('customers').select('tenant_id').where('id', '=', id).executeTakeFirstOrThrow()).tenant_id,
      environment: 'sandbox' as const,
      settings: {},
    };
    await expect(requireFeature(t.db, aCtx, id, 'virtual_cards')).rejects.toSatisfy(isError('feature_not_active', 403));

    const act = await a.post('/v1/risk/features/activate', {
      feature_id: 'virtual_cards',
      customer_id: id,
      provider_data: { ...CARD_DATA, account_id: 'ignored' },
    });
    expect(act.status).toBe(200);
    expect(act.body.data).toMatchObject({ customer_id: id, feature_id: 'virtual_cards', status: 'active', provider_data: CARD_DATA });
    expect(act.body.data.activated_at).toMatch(/Z$/);
    await expect(requireFeature(t.db, aCtx, id, 'virtual_cards')).resolves.toBeUndefined();
    await expect(requireFeature(t.db, aCtx, id, 'physical_cards')).rejects.toMatchObject({ code: 'feature_not_active' });

    const again = await a.post('/v1/risk/features/activate', { feature_id: 'virtual_cards', customer_id: id, provider_data: CARD_DATA });
    expect(again.body.data.activated_at).toBe(act.body.data.activated_at);
    const events = await t.db
      .selectFrom('events')
      .select(eventEnvelope().as('payload'))
      .where('event_type', '=', 'feature.activated')
      .where('event_group_id', '=', id)
      .execute();
    expect(events).toHaveLength(1);
    expect(events[0]!.payload.event_data).toMatchObject({ feature_id: 'virtual_cards', status: 'active' });
    const list = await a.get(`/v1/risk/features?customer_id=${id}&status=active`);
    expect(list.body.data.features.map((f: { feature_id: string }) => f.feature_id)).toEqual(['virtual_cards']);

    const physical = await a.post('/v1/risk/features/activate', {
      feature_id: 'physical_cards',
      customer_id: id,
      provider_data: CARD_DATA,
    });
    expect(physical.status).toBe(403);
    expect(physical.body.error.code).toBe('kyc_level_insufficient');
  });

  it('explains missing and invalid provider_data (400) and unknown features (404)', async () => {
    const id = await createCustomer(api, johnDoe());
    await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved' });
    const missing = await api.post('/v1/risk/features/activate', {
      feature_id: 'virtual_cards',
      customer_id: id,
      provider_data: { annual_remuneration: -5, ip_address: '999.1.1.1' },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'provider_data.annual_remuneration',
      'provider_data.estimated_monthly_limit',
      'provider_data.ip_address',
    ]);
    const elig = await api.post('/v1/risk/features/eligibility', {
      feature_id: 'virtual_cards',
      customer_id: id,
      provider_data: { annual_remuneration: 'lots' },
    });
    expect(elig.body.data.requirements_pending[0].action.description).toContain('positive number');
    expect((await api.post('/v1/risk/features/activate', { feature_id: 'crypto_wallet', customer_id: id })).status).toBe(404);
    expect((await api.post('/v1/risk/features/eligibility', { feature_id: 'teleport', customer_id: id })).status).toBe(404);
    expect((await api.post('/v1/risk/features/eligibility', { feature_id: 'virtual_cards', customer_id: id, extra: true })).status).toBe(
      400,
    );
    expect(
      (await other.post('/v1/risk/features/activate', { feature_id: 'virtual_cards', customer_id: id, provider_data: CARD_DATA })).status,
    ).toBe(404);
    expect((await live.post('/v1/risk/features/eligibility', { feature_id: 'virtual_cards', customer_id: id })).status).toBe(404);
  });
});

describe('gating functions', () => {
  it('requireKycLevel follows the approved level', async () => {
    const id = await createCustomer(api, johnDoe());
    await expect(requireKycLevel(t.db, ctxOf(), id, 'basic')).rejects.toSatisfy(isError('kyc_level_insufficient', 403));
    await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved' });
    await expect(requireKycLevel(t.db, ctxOf(), id, 'basic')).resolves.toBeUndefined();
    await expect(requireKycLevel(t.db, ctxOf(), id, 'intermediate')).rejects.toMatchObject({ code: 'kyc_level_insufficient' });
    await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved', level: 'intermediate' });
    await expect(requireKycLevel(t.db, ctxOf(), id, 'intermediate')).resolves.toBeUndefined();
    await expect(requireKycLevel(t.db, { ...ctxOf(), environment: 'live' }, id, 'basic')).rejects.toMatchObject({
      code: 'kyc_level_insufficient',
    });
  });

  it('requireAccountCurrency lets home currencies through and gates the others', async () => {
    const id = await createCustomer(api, johnDoe());
    await expect(requireAccountCurrency(t.db, ctxOf(), id, 'NGN', t.config)).resolves.toBeUndefined();
    await expect(requireAccountCurrency(t.db, ctxOf(), null, 'EUR', t.config)).resolves.toBeUndefined();
    await expect(requireAccountCurrency(t.db, ctxOf(), id, 'EUR', t.config)).rejects.toMatchObject({ code: 'feature_not_active' });
    await expect(requireAccountCurrency(t.db, ctxOf({ home_currencies: ['EUR'] }), id, 'EUR', t.config)).resolves.toBeUndefined();
    await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved' });
    const act = await api.post('/v1/risk/features/activate', {
      feature_id: 'eur_account',
      customer_id: id,
      provider_data: { source_of_funds: 'salary' },
    });
    expect(act.status).toBe(200);
    await expect(requireAccountCurrency(t.db, ctxOf(), id, 'EUR', t.config)).resolves.toBeUndefined();
  });

  it('checkTransactionLimit applies per-transaction and daily limits of the KYC level, overridable per business', async () => {
    const id = await createCustomer(api, johnDoe());
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'USD', 100n, { config: t.config })).rejects.toMatchObject({
      code: 'kyc_level_insufficient',
    });
    await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved' });
    const opts = { config: t.config };
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'USD', 100_000n, opts)).resolves.toBeUndefined(); // 1000.00 USD: at the limit
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'USD', 100_001n, opts)).rejects.toSatisfy(isError('limit_exceeded', 422));
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'USD', 50_000n, { ...opts, spentTodayMinor: 450_000n })).resolves.toBeUndefined();
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'USD', 50_001n, { ...opts, spentTodayMinor: 450_000n })).rejects.toMatchObject({
      code: 'limit_exceeded',
      details: [expect.objectContaining({ code: 'daily_limit' })],
    });
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'UGX', 3_700_000n, opts)).resolves.toBeUndefined();
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'JPY', 1n, opts)).rejects.toMatchObject({ code: 'limit_exceeded' });
    const custom = ctxOf({ kyc_limits: { basic: { USD: { per_transaction: '10.00', daily: '20' } } } });
    await expect(checkTransactionLimit(t.db, custom, id, 'USD', 1_001n, opts)).rejects.toMatchObject({ code: 'limit_exceeded' });
    await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved', level: 'intermediate' });
    await expect(checkTransactionLimit(t.db, ctxOf(), id, 'USD', 1_000_000n, opts)).resolves.toBeUndefined();
  });
});
