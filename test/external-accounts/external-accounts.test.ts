import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listInstitutions } from '../../src/lib/institutions.js';
import { nubanCheckDigit } from '../../src/lib/payee-validation.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;
let customerId: string;

const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
const mtnGh = listInstitutions({ country: 'GH', type: 'mobile_money' }).find((i) => i.code === 'MTN')!;

/** A valid GTBank NUBAN whose serial starts with `prefix` (6 digits) and ends in `tail` (3 digits). */
export function nuban(prefix: string, tail = '123'): string {
  const serial = prefix + tail;
  return serial + String(nubanCheckDigit('058', serial));
}
/** A valid NUBAN ending in 0000: the sandbox's magic "fails verification" number. */
function failingNuban(): string {
  for (let p = 100000; ; p++) {
    const serial = `${p}000`;
    if (nubanCheckDigit('058', serial) === 0) return `${serial}0`;
  }
}

const runVerification = () => verifyDuePayees(t.db, t.unitOfWork, { SANDBOX_RAIL_DELAY_MS: 0 });

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  biz = await t.tenant('Payee Co');
  api = clientFor(t, biz.sandbox.secret_key);
  customerId = (await api.post('/v1/customers', johnDoe())).body.data.id;
});
afterAll(() => t.close());

const bankBody = (over: Record<string, unknown> = {}) => ({
  payee_type: 'bank_account',
  account_number: nuban('152052'),
  account_name: 'Amina Bello',
  currency: 'NGN',
  customer_id: customerId,
  institution_id: gtb.id,
  ...over,
});
const momoBody = (over: Record<string, unknown> = {}) => ({
  payee_type: 'mobile_money',
  phone_number: '+233241234567',
  account_name: 'Kwame Mensah',
  currency: 'GHS',
  customer_id: customerId,
  institution_id: mtnGh.id,
  ...over,
});
const address = { address_line1: '1800 N Pole St', city: 'Orlando', postal_code: '32801', state: 'US-FL', country: 'US' };

describe('institutions', () => {
  it('lists banks and operators per country with a public key, amounts as decimal strings', async () => {
    const res = await clientFor(t, biz.sandbox.public_key).get(
      '/v1/external-accounts/institutions?country_iso_code=GH&institution_type=mobile_money',
    );
    expect(res.status).toBe(200);
    expect(res.body.data.items.map((i: { name: string }) => i.name)).toContain('MTN Mobile Money');
    const item = res.body.data.items.find((i: { code: string }) => i.code === 'MTN');
    expect(item).toMatchObject({
      currency: 'GHS',
      account_number_type: 'phone_number',
      min_amount: '1.00',
      max_amount: '20000.00',
      institution_type: 'mobile_money',
    });
    const ng = await api.get('/v1/external-accounts/institutions?country_iso_code=NG&items_per_page=5&page=2');
    expect(ng.body.data).toMatchObject({ page: 2, items_per_page: 5 });
    expect(ng.body.data.items).toHaveLength(5);
    expect(ng.body.data.total_items).toBeGreaterThan(25);
  });
  it('rejects bad filters', async () => {
    expect((await api.get('/v1/external-accounts/institutions?country_iso_code=XX')).status).toBe(400);
    expect((await api.get('/v1/external-accounts/institutions?institution_type=crypto')).status).toBe(400);
  });
});

describe('POST /v1/external-accounts', () => {
  it('adds a bank payee as pending (202), verifies it to active with payee.setup events', async () => {
    const res = await api.post('/v1/external-accounts', bankBody());
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({
      status: 'pending',
      payee_type: 'bank_account',
      institution_name: gtb.name,
      institution_country_iso_code: 'NG',
      currency: 'NGN',
    });
    await runVerification();
    const got = await api.get(`/v1/external-accounts/${res.body.data.id}`);
    expect(got.body.data.status).toBe('active');
    const events = await t.db
      .selectFrom('events')
      .select('event_type')
      .where('event_group_id', '=', res.body.data.id)
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.event_type)).toEqual(['payee.setup.pending', 'payee.setup.completed']);
  });

  it('fails verification for an account number ending in 0000 (sandbox magic), exactly once', async () => {
    const res = await api.post('/v1/external-accounts', bankBody({ account_number: failingNuban() }));
    expect(res.status).toBe(202);
    await runVerification();
    await runVerification();
    const got = await api.get(`/v1/external-accounts/${res.body.data.id}`);
    expect(got.body.data).toMatchObject({ status: 'failed' });
    expect(got.body.data.failure_reason).toBeTruthy();
    const events = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', res.body.data.id).execute();
    expect(events.map((e) => e.event_type).sort()).toEqual(['payee.setup.failed', 'payee.setup.pending']);
  });

  it('adds a mobile money payee for its operator', async () => {
    const res = await api.post('/v1/external-accounts', momoBody());
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ phone_number: '+233241234567', institution_type: 'mobile_money', currency: 'GHS' });
  });

  it('adds SEPA, ACH/wire, SWIFT and FPS payees', async () => {
    const sepa = await api.post('/v1/external-accounts', {
      payee_type: 'sepa',
      account_owner_type: 'individual',
      iban: 'DE89 3704 0044 0532 0130 00',
      account_name: 'Anna Schmidt',
      currency: 'EUR',
      customer_id: customerId,
      address: { ...address, state: 'DE-BE', country: 'DE' },
    });
    expect(sepa.status).toBe(202);
    expect(sepa.body.data.iban).toBe('DE89370400440532013000');
    const ach = await api.post('/v1/external-accounts', {
      payee_type: 'ach_wire',
      account_number: '4401682860',
      account_name: 'Amina Bello',
      currency: 'USD',
      customer_id: customerId,
      routing_number: '021000021',
      account_owner_type: 'individual',
      account_type: 'savings',
      address,
      payment_rail: 'ach',
    });
    expect(ach.status).toBe(202);
    expect(ach.body.data.payment_rail).toBe('ach');
    const swift = await api.post('/v1/external-accounts', {
      payee_type: 'swift',
      account_owner_type: 'individual',
      account_number: '1245909283',
      account_name: 'Amina Bello',
      bic: 'GTBINGLA',
      currency: 'USD',
      customer_id: customerId,
      address: { ...address, state: 'NG-LA', country: 'NG' },
    });
    expect(swift.status).toBe(202);
    const fps = await api.post('/v1/external-accounts', {
      payee_type: 'fps',
      account_number: '12345678',
      sort_code: '20-00-00',
      account_name: 'Jane Smith',
      currency: 'GBP',
      customer_id: customerId,
    });
    expect(fps.status).toBe(202);
    expect(fps.body.data.sort_code).toBe('200000');
  });

  it('returns the existing payee for a duplicate instead of a second one', async () => {
    const body = bankBody({ account_number: nuban('777777') });
    const first = await api.post('/v1/external-accounts', body);
    const second = await api.post('/v1/external-accounts', body);
    expect(second.body.data.id).toBe(first.body.data.id);
    await runVerification();
    const third = await api.post('/v1/external-accounts', body);
    expect(third.status).toBe(200);
    expect(third.body.data).toMatchObject({ id: first.body.data.id, status: 'active' });
  });

  it('reports every invalid detail at once', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [bankBody({ account_number: '1520525655' }), ['account_number']],
      [bankBody({ currency: 'GHS', institution_id: '00000000-0000-4000-8000-000000000000' }), ['institution_id']],
      [bankBody({ currency: 'GHS' }), ['currency']],
      [momoBody({ phone_number: '+233201234567' }), ['phone_number']],
      [momoBody({ phone_number: '+254712345678' }), ['phone_number']],
      [momoBody({ institution_id: gtb.id }), ['institution_id']],
      [
        {
          payee_type: 'sepa',
          account_owner_type: 'individual',
          iban: 'DE89370400440532013001',
          account_name: 'A',
          currency: 'EUR',
          customer_id: customerId,
          address,
        },
        ['iban'],
      ],
      [
        {
          payee_type: 'ach_wire',
          account_number: '44',
          routing_number: '021000022',
          account_name: 'A',
          currency: 'USD',
          customer_id: customerId,
          account_owner_type: 'individual',
          account_type: 'savings',
          address: { ...address, state: 'NY' },
        },
        ['account_number', 'routing_number', 'address.state'],
      ],
      [
        {
          payee_type: 'swift',
          account_owner_type: 'individual',
          account_name: 'A',
          bic: 'NG2893A',
          currency: 'USD',
          customer_id: customerId,
          address,
        },
        ['bic', 'account_number'],
      ],
      [
        { payee_type: 'fps', account_number: '1234567', sort_code: '20-00', account_name: 'A', currency: 'GBP', customer_id: customerId },
        ['account_number', 'sort_code'],
      ],
      [{ ...bankBody(), colour: 'blue' }, ['colour']],
      [{ ...bankBody(), payee_type: 'cheque' }, ['payee_type']],
    ];
    for (const [body, fields] of cases) {
      const res = await api.post('/v1/external-accounts', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      const got = res.body.error.details.map((d: { field: string }) => d.field);
      for (const f of fields) expect(got, JSON.stringify(res.body.error.details)).toContain(f);
    }
  });

  it('404s for an unknown customer and for another business', async () => {
    expect((await api.post('/v1/external-accounts', bankBody({ customer_id: '0190a5b0-0000-7000-8000-000000000000' }))).status).toBe(404);
    const other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
    expect((await other.post('/v1/external-accounts', bankBody())).status).toBe(404);
  });
});

describe('GET, list and DELETE', () => {
  it('lists with filters and pagination, isolates businesses and environments', async () => {
    const list = await api.get(`/v1/external-accounts?customer_id=${customerId}&payee_type=bank_account&items_per_page=2`);
    expect(list.status).toBe(200);
    expect(list.body.data.items.length).toBe(2);
    expect(list.body.data.total_items).toBeGreaterThanOrEqual(3);
    const next = await api.get(
      `/v1/external-accounts?customer_id=${customerId}&payee_type=bank_account&items_per_page=2&cursor=${list.body.data.next_cursor}`,
    );
    expect(next.body.data.items[0].id).not.toBe(list.body.data.items[0].id);
    expect((await api.get('/v1/external-accounts?status=weird')).status).toBe(400);
    const id = list.body.data.items[0].id;
    expect((await clientFor(t, biz.live.secret_key).get(`/v1/external-accounts/${id}`)).status).toBe(404);
    const other = clientFor(t, (await t.tenant('Other 2')).sandbox.secret_key);
    expect((await other.get(`/v1/external-accounts/${id}`)).status).toBe(404);
    expect((await other.delete(`/v1/external-accounts/${id}`)).status).toBe(404);
    expect((await api.get('/v1/external-accounts/not-a-uuid')).status).toBe(400);
  });
  it('deletes a payee: gone from get and list', async () => {
    const res = await api.post('/v1/external-accounts', bankBody({ account_number: nuban('555555') }));
    const del = await api.delete(`/v1/external-accounts/${res.body.data.id}`);
    expect(del.status).toBe(200);
    expect((await api.get(`/v1/external-accounts/${res.body.data.id}`)).status).toBe(404);
    expect((await api.delete(`/v1/external-accounts/${res.body.data.id}`)).status).toBe(404);
  });
});

describe('POST /v1/external-accounts/verify', () => {
  it('resolves a bank account name, and not a magic failing number', async () => {
    const ok = await api.post('/v1/external-accounts/verify', { account_number: nuban('152052'), institution_id: gtb.id });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ is_verified: true, bank_code: '058' });
    const bad = await api.post('/v1/external-accounts/verify', { account_number: failingNuban(), institution_id: gtb.id });
    expect(bad.body.data.is_verified).toBe(false);
    expect(bad.body.data.institutions[0].id).toBe(gtb.id);
    expect((await api.post('/v1/external-accounts/verify', { country_code: 'NG' })).status).toBe(400);
  });
});
