import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { omitNulls } from '../../src/lib/absent.js';
import { formatAmount } from '../../src/lib/money.js';
import type { AccountRow } from '../../src/modules/accounts/repo.js';
import { toAccountResponse } from '../../src/modules/accounts/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

/** toAccountResponse as it was written before it built its answer field by field (a whole object, then omitNulls). */
function previousAnswer(row: AccountRow, balance: { posted: bigint; available: bigint } | undefined) {
  const capabilities = { active: ['transfer', 'receive'], frozen: ['receive'], deleted: [] }[row.status];
  const bank = row.bank_details;
  return omitNulls(
    {
      id: row.id,
      label: row.label,
      date_created: row.created_at.toISOString(),
      date_updated: row.updated_at.toISOString(),
      type: row.type,
      customer_id: row.customer_id,
      capabilities,
      currency: row.currency,
      tenant_id: row.tenant_id,
      status: row.status,
      category: row.category,
      balance: formatAmount(balance?.posted ?? 0n, row.currency),
      available_balance: formatAmount(balance?.available ?? 0n, row.currency),
      is_tokenized: false,
      account_number: row.account_number,
      bank_details: bank,
      virtual_account_bank_name: bank.bank_name,
      virtual_account_bank_account_number: bank.account_number,
      virtual_account_bank_routing_number: bank.routing_number,
      virtual_account_bank_beneficiary_name: bank.account_name,
      metadata: row.metadata,
    },
    ['customer_id', 'virtual_account_bank_routing_number'],
  );
}

describe('toAccountResponse', () => {
  const bank = {
    account_number: '0123456789',
    account_name: 'Acme Ltd',
    bank_name: 'Bank',
    bank_code: null,
    country: 'NG',
    routing_number: null as string | null,
    sort_code: null,
    iban: null,
    bic: null,
    clabe: null,
    branch_code: null,
  };
  const row: AccountRow = {
    id: '0190e7a0-0000-7000-8000-000000000001',
    tenant_id: '0190e7a0-0000-7000-8000-000000000002',
    environment: 'sandbox',
    customer_id: null,
    currency: 'NGN',
    type: 'regular',
    label: 'ops',
    status: 'active',
    category: 'general',
    account_number: '0123456789',
    bank_details: bank,
    metadata: { a: 1 },
    created_at: new Date('2026-12-02T16:25:36.123Z'),
    updated_at: new Date('2026-12-02T16:25:37.000Z'),
  };

  it('the same keys in the same order, and the same values, as the whole object stripped of absent fields', () => {
    const variants: AccountRow[] = [
      row,
      { ...row, customer_id: '0190e7a0-0000-7000-8000-000000000003' },
      { ...row, bank_details: { ...bank, routing_number: '021000021' }, currency: 'USD' },
      { ...row, bank_details: { ...bank, routing_number: undefined as never } },
      { ...row, status: 'frozen', customer_id: '0190e7a0-0000-7000-8000-000000000003', bank_details: { ...bank, routing_number: '1' } },
      { ...row, status: 'deleted' },
    ];
    for (const variant of variants) {
      for (const balance of [undefined, { posted: 123456n, available: -5n }]) {
        const now = toAccountResponse(variant, balance);
        const before = previousAnswer(variant, balance);
        expect(now).toStrictEqual(before);
        expect(Object.keys(now)).toEqual(Object.keys(before));
      }
    }
  });
});

describe('GET /v1/accounts/{id}: the same answer as the list gives for the account', () => {
  let t: TestApp;
  let api: Client;
  const ids: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    const tenant = await t.tenant('Acme "Quoted" \\ Ltd');
    api = clientFor(t, tenant.sandbox.secret_key);
    const customer = (await api.post('/v1/customers', johnDoe({ first_name: 'Zoë', last_name: 'Ñandú' }))).body.data.id as string;
    const made = [
      { currency: 'NGN', label: 'business' },
      { currency: 'USD', label: 'has a routing number' },
      {
        currency: 'NGN',
        label: 'customer "quoted" \\ é ✓ 😀',
        customer_id: customer,
        metadata: { note: 'line\nbreak', n: 1.5, list: [1, 'x'] },
      },
      { currency: 'GBP', label: 'frozen' },
      { currency: 'EUR', label: 'dates' },
    ];
    for (const body of made) {
      const res = await api.post('/v1/accounts', body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(res.body.data.id as string);
    }
    expect((await api.post(`/v1/simulations/accounts/${ids[0]}/fund`, { amount: '1234.56' })).status).toBe(200);
    expect((await api.patch(`/v1/accounts/${ids[3]}/status`, { status: 'frozen' })).status).toBe(200);
  });
  afterAll(async () => t?.close());

  const listed = async () => {
    const res = await api.get('/v1/accounts?items_per_page=100');
    expect(res.status).toBe(200);
    return new Map((res.body.data.items as { id: string }[]).map((item) => [item.id, JSON.stringify(item)]));
  };

  it('every field, in order, for accounts of each kind', async () => {
    const list = await listed();
    for (const id of ids) {
      const read = await api.get(`/v1/accounts/${id}`);
      expect(read.status).toBe(200);
      expect(JSON.stringify(read.body.data), id).toBe(list.get(id));
    }
  });

  it('timestamps of every precision and era the columns can hold', async () => {
    const id = ids[4]!;
    const stamps = [
      ['2026-12-02 16:25:36.123456+00', '2026-12-02 16:25:36+00'],
      ['2026-12-02 16:25:36.9999994+00', '2026-12-02 16:25:36.1+00'],
      ['1000-01-01 00:00:00.000001+00', '9999-12-31 23:59:59.999999+00'],
      ['0999-12-31 23:59:59.99+00', '0050-06-15 12:00:00.5+00'],
      ['0001-01-01 00:00:00+00 BC', '12345-01-01 00:00:00+00'],
      ['2026-12-02 21:55:36.12+05:30', '2026-12-02 08:25:36-08'],
    ];
    let answered = 0;
    for (const [created, updated] of stamps) {
      await sql`update accounts set created_at = ${created}::timestamptz, updated_at = ${updated}::timestamptz where id = ${id}`.execute(
        t.db,
      );
      const read = await api.get(`/v1/accounts/${id}`);
      const list = await api.get('/v1/accounts?items_per_page=100');
      const label = `${created} / ${updated}: ${read.text}`;
      expect(read.status, label).toBe(list.status);
      if (list.status !== 200) {
        expect(read.body.error.code, label).toBe(list.body.error.code);
        continue;
      }
      answered++;
      const item = list.body.data.items.find((a: { id: string }) => a.id === id);
      expect(JSON.stringify(read.body.data), label).toBe(JSON.stringify(item));
    }
    // All but the eras a driver cannot write as ISO text answer (what they answered before too).
    expect(answered).toBeGreaterThanOrEqual(4);
  });

  it('a timestamp of infinity fails the read as it fails the list', async () => {
    const id = ids[4]!;
    await sql`update accounts set updated_at = 'infinity' where id = ${id}`.execute(t.db);
    const read = await api.get(`/v1/accounts/${id}`);
    const list = await api.get('/v1/accounts?items_per_page=100');
    expect(list.status).toBe(500);
    expect(read.status).toBe(500);
    expect(read.body.error.code).toBe(list.body.error.code);
  });
});
