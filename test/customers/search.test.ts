import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import * as customers from '../../src/modules/customers/repo.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';
import { planWithoutSeqScans, sentStatements } from '../plans.js';

/**
 * GET /v1/customers?keyword= matches the keyword inside a customer's names or email (or is its
 * id). It walked every customer of the business, newest first, testing each, until a page was
 * full: a keyword that few customers hold read them all, so the request cost more with every
 * customer the business added. A trigram index (migration 1104) now finds the few that can match.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('customer keyword search walks an index', () => {
  // A business the planner can weigh: 20,000 customers (with fewer, reading them all is cheap
  // enough that the planner rightly does), then the table's statistics.
  const busy = newId();
  const scope = { tenantId: busy, environment: 'sandbox' as const };
  beforeAll(async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({
      id: newId(),
      tenant_id: busy,
      environment: 'sandbox',
      type: 'individual' as const,
      email: `customer${i}@example.com`,
      phone: '+2348012345678',
      first_name: `Ada${i}`,
      last_name: i % 2 === 0 ? 'Okafor' : 'Bello',
      address: JSON.stringify(johnDoe().address),
    }));
    for (let i = 0; i < rows.length; i += 1000)
      await t.db
        .insertInto('customers')
        .values(rows.slice(i, i + 1000))
        .execute();
    await sql`analyze customers`.execute(t.db);
  });

  const plansOf = async (keyword: string) => {
    const statements = await sentStatements(t.db, (db) => customers.listCustomers(db, scope, { page: 1, items_per_page: 20, keyword }));
    expect(statements).toHaveLength(2); // the page and its capped count
    // Generic: made without the parameters' values, as a prepared statement's plan becomes.
    return Promise.all(statements.map((statement) => planWithoutSeqScans(t.db, statement, 'generic')));
  };

  it('finds a rare keyword through customers_search_idx, generic plan too', async () => {
    for (const plan of await plansOf('customer1234@')) {
      expect(plan).toContain('customers_search_idx');
      expect(plan).not.toMatch(/Seq Scan/);
    }
  });

  it('plans a common keyword with its value too (newest first, stopping at a full page)', async () => {
    for (const plan of await plansOf('okafor')) expect(plan).not.toMatch(/~~\* \$/);
  });
});

describe('customer keyword search matches as before', () => {
  let biz: CreatedTenant;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    biz = await t.tenant('Keyword Search Ltd');
    const client = clientFor(t, biz.sandbox.secret_key);
    const people: [string, string, string][] = [
      ['Zoë', "O'Brien", 'zoe@example.com'],
      ['Ada_1', 'Lovelace', 'ada@example.com'],
      ['Adax1', 'Byron', 'adax1@example.com'],
      ['Back', 'Slash\\Name', 'backslash@example.com'],
      ['John', 'Smith', 'john@example.com'],
    ];
    for (const [first_name, last_name, email] of people) {
      const res = await client.post('/v1/customers', johnDoe({ first_name, last_name, email }));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids[last_name] = res.body.data.id;
    }
  });

  const found = async (keyword: string) => {
    const res = await clientFor(t, biz.sandbox.secret_key).get(`/v1/customers?keyword=${encodeURIComponent(keyword)}`);
    expect(res.status).toBe(200);
    return (res.body.data.items as { last_name: string }[]).map((c) => c.last_name).sort();
  };

  it('in any one of the names or the email, whatever the case', async () => {
    expect(await found('LOVE')).toEqual(['Lovelace']);
    expect(await found('zoë')).toEqual(["O'Brien"]);
    expect(await found('john@')).toEqual(['Smith']);
  });

  it('with quotes, backslashes, % and _ taken literally', async () => {
    expect(await found("o'b")).toEqual(["O'Brien"]);
    expect(await found('h\\n')).toEqual(['Slash\\Name']);
    expect(await found('a_1')).toEqual(['Lovelace']); // not Adax1
    expect(await found('a%1')).toEqual([]);
  });

  it('never across two columns, and by id', async () => {
    expect(await found('john smith')).toEqual([]);
    expect(await found(ids.Smith!)).toEqual(['Smith']);
    expect(await found(ids.Smith!.toUpperCase())).toEqual(['Smith']);
  });
});
