import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { createCustomer, passport, selfie, verify } from '../kyc-helpers.js';
import { ageOn } from '../../src/modules/kyc/compliance.js';
import { reviewCase } from '../../src/modules/kyc/service.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';

let t: TestApp;
let biz: CreatedTenant;

// A real-format OFAC SDN list given through SANCTIONS_LIST_FILE replaces the shipped sample.
const dir = mkdtempSync(join(tmpdir(), 'sdn-'));
const sdn = join(dir, 'sdn.csv');
writeFileSync(
  sdn,
  '501,"KOVALENKO, Dmytro Ivanovych","individual","UKRAINE-EO13660","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- ","-0- "\n',
);

beforeAll(async () => {
  t = await startTestApp({ SANCTIONS_LIST_FILE: sdn, KYC_MIN_AGE_BY_COUNTRY: ['US:21'] });
  biz = await t.tenant('Compliance Co');
});
afterAll(() => t.close());

async function freshApi(): Promise<Client> {
  return clientFor(t, (await t.tenant('Fresh Co')).sandbox.secret_key);
}

const statusOf = async (a: Client, id: string) => (await a.get(`/v1/customers/${id}/kyc/status`)).body.data;

describe('age of majority', () => {
  it('counts whole years, birthdays on the day', () => {
    expect(ageOn('2000-06-15', new Date('2018-06-14T12:00:00Z'))).toBe(17);
    expect(ageOn('2000-06-15', new Date('2018-06-15T00:00:00Z'))).toBe(18);
  });

  it('rejects a minor with a final decision', async () => {
    const a = await freshApi();
    const dob = `${new Date().getUTCFullYear() - 17}-01-01`;
    const id = await createCustomer(a, johnDoe({ date_of_birth: dob }));
    await verify(a, id);
    const s = await statusOf(a, id);
    expect(s.reviewResult).toMatchObject({
      reviewAnswer: 'rejected',
      rejectLabels: ['AGE_REQUIREMENT_MISMATCH'],
      reviewRejectType: 'FINAL',
    });
    const restart = await a.post('/v1/customers/kyc/start', { customer_id: id });
    expect(restart.status).toBe(409);
    expect(restart.body.error.code).toBe('invalid_state_transition');
  });

  it('uses the per-country minimum (US:21)', async () => {
    const a = await freshApi();
    const dob = `${new Date().getUTCFullYear() - 20}-01-01`;
    const address = { address_line1: '1 Main St', city: 'Austin', country: 'US', postal_code: '73301', state: 'US-TX' };
    const id = await createCustomer(a, johnDoe({ date_of_birth: dob, address, phone: '+12025550123' }));
    await verify(a, id);
    expect((await statusOf(a, id)).reviewResult.rejectLabels).toEqual(['AGE_REQUIREMENT_MISMATCH']);
  });
});

describe('supported country', () => {
  it('rejects residents of an unsupported country (retry allowed)', async () => {
    const a = await freshApi();
    const address = { address_line1: '1 Road', city: 'Kabul', country: 'AF', postal_code: '1001', state: 'AF-KAB' };
    const id = await createCustomer(a, johnDoe({ address, phone: '+93701234567' }));
    await verify(a, id);
    expect((await statusOf(a, id)).reviewResult).toMatchObject({ rejectLabels: ['UNSUPPORTED_COUNTRY'], reviewRejectType: 'RETRY' });
  });
});

describe('duplicate identity', () => {
  it('sends the same name and date of birth to manual review', async () => {
    const a = await freshApi();
    const first = await createCustomer(a, johnDoe());
    await verify(a, first);
    expect((await statusOf(a, first)).reviewResult.reviewAnswer).toBe('approved');
    const second = await createCustomer(a, johnDoe());
    await verify(a, second);
    expect(await statusOf(a, second)).toMatchObject({ reviewStatus: 'pending', review_reason: 'manual_review' });
  });

  it('sends the same ID document number to manual review', async () => {
    const a = await freshApi();
    const one = await createCustomer(a, johnDoe({ first_name: 'Ada', last_name: 'Obi' }));
    const two = await createCustomer(a, johnDoe({ first_name: 'Bola', last_name: 'Ade' }));
    const doc = (id: string) =>
      passport(id, { metadata: { idDocType: 'PASSPORT', idDocSubType: 'FRONT_SIDE', country: 'NGA', number: 'SAME123' } });
    for (const id of [one, two]) {
      await a.post('/v1/customers/kyc/upload-document', doc(id));
      await a.post('/v1/customers/kyc/upload-document', selfie(id));
    }
    await a.post('/v1/customers/kyc/start-s2s', { customer_id: two });
    expect((await statusOf(a, two)).review_reason).toBe('manual_review');
  });
});

describe('document data against the customer', () => {
  it('sends a different date of birth or name on the document to manual review', async () => {
    const a = await freshApi();
    const meta = (extra: Record<string, unknown>) => ({
      metadata: { idDocType: 'PASSPORT', idDocSubType: 'FRONT_SIDE', country: 'NGA', ...extra },
    });
    const ok = await createCustomer(a, johnDoe({ first_name: 'Tunde', last_name: 'Bakare' }));
    await a.post('/v1/customers/kyc/upload-document', passport(ok, meta({ firstName: 'TUNDE', lastName: 'BAKARE', dob: '1990-01-15' })));
    await a.post('/v1/customers/kyc/upload-document', selfie(ok));
    await a.post('/v1/customers/kyc/start-s2s', { customer_id: ok });
    expect((await statusOf(a, ok)).reviewResult?.reviewAnswer).toBe('approved');
    for (const extra of [{ dob: '1991-02-02' }, { firstName: 'Grace', lastName: 'Eze' }]) {
      const id = await createCustomer(a, johnDoe({ first_name: `N${Object.keys(extra)[0]}`, last_name: 'Okoro' }));
      await a.post('/v1/customers/kyc/upload-document', passport(id, meta(extra)));
      await a.post('/v1/customers/kyc/upload-document', selfie(id));
      await a.post('/v1/customers/kyc/start-s2s', { customer_id: id });
      expect((await statusOf(a, id)).review_reason).toBe('manual_review');
    }
  });
});

describe('sanctions screening', () => {
  it('sends a fuzzy match against the configured list to manual review, never approval', async () => {
    const a = await freshApi();
    const id = await createCustomer(a, johnDoe({ first_name: 'Dmitro', middle_name: undefined, last_name: 'Kovalenko' }));
    await verify(a, id);
    expect(await statusOf(a, id)).toMatchObject({ reviewStatus: 'pending', review_reason: 'manual_review' });
    const row = await t.db.selectFrom('kyc_cases').select('checks').where('customer_id', '=', id).executeTakeFirstOrThrow();
    expect(row.checks.find((c) => c.check === 'sanctions')).toMatchObject({ result: 'hit' });
    // The check's details stay internal: the API only says manual_review.
    expect(JSON.stringify(await statusOf(a, id))).not.toContain('KOVALENKO');
  });

  it('re-checks on customer changes: an approved customer renamed to a listed name goes to review', async () => {
    const a = await freshApi();
    const id = await createCustomer(a, johnDoe({ first_name: 'Clean', last_name: 'Person' }));
    await verify(a, id);
    expect((await a.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe('approved');
    const harmless = await a.put(`/v1/customers/${id}`, { email: 'new.mail@example.com' });
    expect(harmless.body.data.customer.kyc_status).toBe('approved');
    const renamed = await a.put(`/v1/customers/${id}`, { first_name: 'Dmytro', middle_name: 'Ivanovych', last_name: 'Kovalenko' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data.customer.kyc_status).toBe('manual_review');
    const events = await t.db
      .selectFrom('events')
      .select('event_type')
      .where('event_group_id', '=', id)
      .where('event_type', '=', 'customer.kyc.status.manual_review')
      .execute();
    expect(events).toHaveLength(1);
  });
});

describe('live: manual connector and operator review', () => {
  it('waits in manual review until an operator decides', async () => {
    const a = clientFor(t, biz.live.secret_key);
    const id = await createCustomer(a, johnDoe({ first_name: 'Live', last_name: 'Customer' }));
    await verify(a, id);
    expect(await statusOf(a, id)).toMatchObject({ reviewStatus: 'pending', review_reason: 'manual_review' });
    const ctx = { tenantId: biz.tenant_id, environment: 'live' as const };
    const decided = await t.db.transaction().execute((trx) => reviewCase(trx, ctx, id, 'approved'));
    expect(decided.reviewResult?.reviewAnswer).toBe('approved');
    expect((await a.get(`/v1/customers/${id}`)).body.data.kyc_status).toBe('approved');
    await expect(t.db.transaction().execute((trx) => reviewCase(trx, ctx, id, 'rejected'))).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      t.db.transaction().execute((trx) => reviewCase(trx, { ...ctx, environment: 'sandbox' }, id, 'approved')),
    ).rejects.toMatchObject({ code: 'not_found' });
  });
});
