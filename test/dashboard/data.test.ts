import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

/** Read-only views of accounts, transfers, transactions and customers: filters, pages, isolation. */
let t: TestApp;
let agent: Agent;
let sandbox: Client;
let live: Client;
let source: string;
let target: string;

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`data+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  sandbox = clientFor(t, agent.textOf('new-secret-sandbox')!);
  live = clientFor(t, agent.textOf('new-secret-live')!);

  const a = await sandbox.post('/v1/accounts', { currency: 'USD', label: 'Operating' });
  const b = await sandbox.post('/v1/accounts', { currency: 'USD', label: 'Payroll' });
  expect(a.status).toBe(200);
  source = a.body.data.id;
  target = b.body.data.id;
  expect((await sandbox.post(`/v1/simulations/accounts/${source}/fund`, { amount: '100.50' })).status).toBe(200);
  const transfer = await sandbox.post('/v1/transfers', {
    source: { source_type: 'internal_account', id: source },
    destination: { destination_type: 'internal_account', id: target },
    amount: '40.25',
    description: 'Salaries',
  });
  expect(transfer.status).toBe(200);
  await live.post('/v1/accounts', { currency: 'USD', label: 'LiveOnly' });
});
afterAll(() => t.close());

describe('data views', () => {
  it('shows accounts with their balances, only of the selected environment', async () => {
    const page = await agent.get('/dashboard/accounts');
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Operating');
    expect(page.body).toContain('Payroll');
    expect(page.body).toContain('60.25');
    expect(page.body).toContain('40.25');
    expect(page.body).not.toContain('LiveOnly');
    const filtered = await agent.get('/dashboard/accounts?label=Payroll');
    expect(filtered.body).toContain('Payroll');
    expect(filtered.body).not.toContain('Operating');
    const bad = await agent.get('/dashboard/accounts?customer_id=nope');
    expect(bad.body).toContain('Invalid filter');
  });

  it('shows transfers and transactions with filters', async () => {
    const transfers = await agent.get('/dashboard/transfers');
    expect(transfers.body).toContain('40.25 USD');
    expect(transfers.body).toContain('badge-completed');
    expect((await agent.get('/dashboard/transfers?status=failed')).body).toContain('No transfers in this environment match');

    const all = await agent.get('/dashboard/transactions');
    expect(all.body).toContain('100.50 USD');
    expect(all.body).toContain('Salaries');
    const out = await agent.get(`/dashboard/transactions?direction=out&account_id=${source}`);
    expect(out.body).toContain('−40.25 USD');
    expect(out.body).not.toContain('100.50 USD');
    expect((await agent.get('/dashboard/transactions?direction=sideways')).body).toContain('Invalid filter');
  });

  it('pages through long lists keeping the filters', async () => {
    for (let i = 0; i < 21; i++) {
      expect((await sandbox.post('/v1/customers', johnDoe({ first_name: `Pager${i}` }))).status).toBe(200);
    }
    const first = await agent.get('/dashboard/customers?type=individual');
    expect(first.body).toContain('Page 1 of 2 · 21 items');
    const next = /href="(\/dashboard\/customers\?[^"]*page=2[^"]*)" rel="next"/.exec(first.body)![1]!.replace(/&amp;/g, '&');
    expect(next).toContain('type=individual');
    const second = await agent.get(next);
    expect(second.body).toContain('Page 2 of 2');
    expect(second.body).toContain('Pager0 Doe');
    expect(second.body).not.toContain('rel="next"');
  });

  it('shows the live environment empty of sandbox data', async () => {
    await agent.post('/dashboard/environment', { environment: 'live', back: 'transactions' });
    const tx = await agent.get('/dashboard/transactions');
    expect(tx.body).toContain('No transactions yet');
    expect(tx.body).not.toContain('/v1/simulations/');
    const accounts = await agent.get('/dashboard/accounts');
    expect(accounts.body).toContain('LiveOnly');
    expect(accounts.body).not.toContain('Operating');
    await agent.post('/dashboard/environment', { environment: 'sandbox', back: 'business' });
  });
});
