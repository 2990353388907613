import { expect } from 'vitest';
import { limitOrderJob } from '../src/modules/fx/worker.js';
import { johnDoe, type Client, type TestApp } from './harness.js';
import { enableAccountCurrency } from './kyc-helpers.js';

/** Factories for the FX tests: customers, accounts with money, balances, the worker. */
export async function newCustomer(api: Client): Promise<string> {
  const res = await api.post('/v1/customers', johnDoe());
  expect(res.status).toBe(200);
  return res.body.data.id;
}

export async function openAccount(api: Client, currency: string, customerId: string | null, fund?: string): Promise<string> {
  if (customerId) await enableAccountCurrency(api, customerId, currency);
  const res = await api.post('/v1/accounts', { currency, label: `fx ${currency}`, ...(customerId ? { customer_id: customerId } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const id = res.body.data.id as string;
  if (fund) expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount: fund })).status).toBe(200);
  return id;
}

export async function balances(api: Client, accountId: string): Promise<{ balance: string; available: string }> {
  const res = await api.get(`/v1/accounts/${accountId}`);
  return { balance: res.body.data.balance, available: res.body.data.available_balance };
}

/** Runs the limit-order worker until it has looked at every waiting order once. */
export async function runLimitWorker(t: TestApp): Promise<void> {
  const job = limitOrderJob(t.db, t.config);
  while (await job.tick()) {
    /* more waiting */
  }
}

export async function eventsOf(t: TestApp, groupId: string): Promise<string[]> {
  const rows = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', groupId).orderBy('id').execute();
  return rows.map((r) => r.event_type);
}
