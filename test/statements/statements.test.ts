import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statement } from '../../src/modules/statements/service.js';
import { newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';

/**
 * Statements (GET /v1/accounts/{id}/statements): the movements of a period with their running
 * balances between the opening and closing balances, as JSON, CSV and a PDF whose text (read
 * back with poppler's pdftotext) carries the same numbers to the minor unit.
 */
let t: TestApp;
let api: Client;
let key: string;
let tenantId: string;
let usd: string;
const MOVEMENTS = 45; // more than the PDF's first page holds

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Statement Traders Ltd');
  key = tenant.sandbox.secret_key;
  tenantId = tenant.tenant_id;
  api = clientFor(t, key);
  const customer = await newCustomer(api);
  await approveKyc(api, customer);
  usd = await openAccount(api, 'USD', customer, '1000.00');
  const savings = await openAccount(api, 'USD', customer);
  expect((await api.post(`/v1/simulations/accounts/${usd}/fund`, { amount: '12.34', reference: '=HYPERLINK("http://x")' })).status).toBe(
    200,
  );
  for (let i = 0; i < MOVEMENTS - 2; i++) {
    const res = await api.post('/v1/transfer', {
      source: { source_type: 'internal_account', id: usd },
      destination: { destination_type: 'internal_account', id: savings },
      amount: `${1 + i}.0${i % 10}`,
      customer_id: customer,
      description: `Rent part ${i}, "quoted" €`,
    });
    expect(res.status, res.text).toBe(200);
  }
}, 120_000);
afterAll(() => t?.close());

const minor = (s: string) => BigInt(s.replace('.', ''));
const today = () => new Date().toISOString().slice(0, 10);

async function raw(url: string, accept?: string) {
  const res = await t.app.inject({ method: 'GET', url, headers: { 'api-key': key, ...(accept ? { accept } : {}) } });
  return { status: res.statusCode, headers: res.headers, body: res.rawPayload };
}

describe('GET /v1/accounts/{id}/statements', () => {
  it('answers JSON whose running balances lead from the opening to the closing balance, as the balances read says', async () => {
    const res = await api.get(`/v1/accounts/${usd}/statements?from=${today()}&to=${today()}`);
    expect(res.status, res.text).toBe(200);
    const s = res.body.data;
    expect(res.body.error).toBeNull();
    expect(s).toMatchObject({
      account_id: usd,
      currency: 'USD',
      business_name: 'Statement Traders Ltd',
      account_holder: 'John Michael Doe',
    });
    expect(s.movements).toHaveLength(MOVEMENTS);
    let running = minor(s.opening_balance);
    let credits = 0n;
    let debits = 0n;
    for (const m of s.movements) {
      const amount = minor(m.amount);
      running += m.direction === 'credit' ? amount : -amount;
      if (m.direction === 'credit') credits += amount;
      else debits += amount;
      expect(minor(m.balance_after)).toBe(running);
    }
    expect(running).toBe(minor(s.closing_balance));
    expect(credits).toBe(minor(s.total_credits));
    expect(debits).toBe(minor(s.total_debits));
    expect(s.movements.map((m: { date: string }) => m.date)).toEqual([...s.movements.map((m: { date: string }) => m.date)].sort());
    const account = (await api.get(`/v1/accounts/${usd}`)).body.data;
    expect(s.closing_balance).toBe(account.balance);
    const period = (await api.get(`/v1/accounts/${usd}/balances?from=${today()}&to=${today()}`)).body.data;
    expect(period).toMatchObject({
      opening_balance: s.opening_balance,
      closing_balance: s.closing_balance,
      total_credits: s.total_credits,
      total_debits: s.total_debits,
    });
    const transfer = s.movements.find((m: { description: string }) => m.description.startsWith('Rent part 3'));
    expect(transfer).toMatchObject({ direction: 'debit', type: expect.any(String) });
    expect(transfer.transaction_id).toBeTruthy();

    const month = await api.get(`/v1/accounts/${usd}/statements?month=${today().slice(0, 7)}`);
    expect(month.body.data.movements).toHaveLength(MOVEMENTS);
    expect(month.body.data.closing_balance).toBe(s.closing_balance);
  });

  it('reads the movements page by page, the pages joined exactly', async () => {
    const scope = { tenantId, environment: 'sandbox' as const };
    const { head, pages } = await statement(t.db, scope, usd, { from: today(), to: today() }, 7);
    const seen: string[] = [];
    let count = 0;
    for await (const page of pages) {
      expect(page.length).toBeLessThanOrEqual(7);
      count++;
      seen.push(...page.map((m) => m.id));
    }
    expect(count).toBe(Math.ceil(MOVEMENTS / 7));
    expect(new Set(seen).size).toBe(MOVEMENTS);
    expect(head.credit_count + head.debit_count).toBe(MOVEMENTS);
  });

  it('answers CSV (by Accept or format) with opening and closing rows, formulas defused', async () => {
    const json = (await api.get(`/v1/accounts/${usd}/statements?from=${today()}`)).body.data;
    for (const res of [
      await raw(`/v1/accounts/${usd}/statements?from=${today()}`, 'text/csv'),
      await raw(`/v1/accounts/${usd}/statements?from=${today()}&format=csv`),
    ]) {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toContain('text/csv');
      expect(res.headers['content-disposition']).toMatch(/^attachment; filename="statement_.*\.csv"$/);
      const lines = res.body.toString('utf8').trimEnd().split('\r\n');
      expect(lines[0]).toBe('date,type,description,reference,transaction_id,debit,credit,balance');
      expect(lines[1]!.endsWith(`,${json.opening_balance}`)).toBe(true);
      expect(lines).toHaveLength(MOVEMENTS + 3);
      expect(lines.at(-1)).toContain(`,${json.total_debits},${json.total_credits},${json.closing_balance}`);
      expect(res.body.toString('utf8')).toContain(`"'=HYPERLINK(""http://x"")"`);
      expect(res.body.toString('utf8')).not.toMatch(/,=HYPERLINK/);
    }
  });

  it('answers a PDF whose text carries the parties, period, every movement and running balance, totals and page numbers', async () => {
    const json = (await api.get(`/v1/accounts/${usd}/statements?from=${today()}`)).body.data;
    const res = await raw(`/v1/accounts/${usd}/statements?from=${today()}`, 'application/pdf');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.body.subarray(0, 5).toString()).toBe('%PDF-');
    const dir = mkdtempSync(join(tmpdir(), 'statement-'));
    try {
      writeFileSync(join(dir, 's.pdf'), res.body);
      const text = execFileSync('pdftotext', ['-layout', join(dir, 's.pdf'), '-'], { encoding: 'utf8' });
      const pages = text.split('\f').filter((p) => p.trim() !== '');
      expect(pages.length).toBeGreaterThan(1);
      pages.forEach((p, i) => expect(p).toContain(`Page ${i + 1} of ${pages.length}`));
      expect(text).toContain('Statement Traders Ltd');
      expect(text).toContain('John Michael Doe');
      const account = (await api.get(`/v1/accounts/${usd}`)).body.data;
      expect(text).toContain(account.bank_details.account_number);
      expect(text).toContain(account.bank_details.bank_name);
      expect(text).toContain(json.from);
      const value = (label: string) => text.match(new RegExp(`${label}\\s+(-?\\d+\\.\\d{2})`))?.[1];
      expect(value('Opening balance')).toBe(json.opening_balance);
      expect(value('Closing balance')).toBe(json.closing_balance);
      expect(value('Total credits')).toBe(json.total_credits);
      expect(value('Total debits')).toBe(json.total_debits);
      // Every movement's row: its amount in the debit or credit column, then its running balance.
      const rows = text
        .split('\n')
        .map((l) => l.match(/^\s*\d{4}-\d{2}-\d{2} \d{2}:\d{2}\s+(.*?)\s+(\d+\.\d{2})\s+(\d+\.\d{2})\s*$/))
        .filter((m): m is RegExpMatchArray => m !== null && !m[1]!.startsWith('Opening balance'));
      const movementRows = rows.filter((m) => !m[1]!.startsWith('Closing balance'));
      expect(movementRows.map((m) => [m[2], m[3]])).toEqual(
        json.movements.map((m: { amount: string; balance_after: string }) => [m.amount, m.balance_after]),
      );
      const closing = text.split('\n').find((l) => /Closing balance\s+\d/.test(l) && /^\s*\d{4}-/.test(l))!;
      expect(closing.trim().split(/\s+/).slice(-3)).toEqual([json.total_debits, json.total_credits, json.closing_balance]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad periods and formats with 400, unknown and foreign accounts with 404', async () => {
    const bad = async (query: string, field: string) => {
      const res = await api.get(`/v1/accounts/${usd}/statements?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    };
    await bad('month=2024-13', 'month');
    await bad('month=2099-01', 'month');
    await bad('month=2024-01&from=2024-01-01', 'month');
    await bad('from=2024-02-01&to=2024-01-01', 'from');
    await bad('to=2024-01-01', 'from');
    await bad('format=xml', 'format');
    expect((await api.get('/v1/accounts/01890000-0000-7000-8000-000000000000/statements')).status).toBe(404);
    const other = clientFor(t, (await t.tenant('Other')).sandbox.secret_key);
    expect((await other.get(`/v1/accounts/${usd}/statements`)).status).toBe(404);
    expect((await raw(`/v1/accounts/${usd}/statements?format=pdf&month=2099-01`)).status).toBe(400);
    const empty = await api.get(`/v1/accounts/${usd}/statements?month=2024-01`);
    expect(empty.body.data).toMatchObject({ opening_balance: '0.00', closing_balance: '0.00', movements: [] });
  });
});
