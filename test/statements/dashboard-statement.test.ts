import { afterAll, beforeAll, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/** The dashboard's account page offers this month's statement as a PDF, for the signed-in business only. */
let t: TestApp;
let agent: Agent;
let accountId: string;

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`statement+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  const api = clientFor(t, agent.textOf('new-secret-sandbox')!);
  accountId = (await api.post('/v1/accounts', { currency: 'USD', label: 'Main' })).body.data.id;
  await api.post(`/v1/simulations/accounts/${accountId}/fund`, { amount: '300.00' });
});
afterAll(() => t.close());

it('links the statement download from the account page and serves the PDF', async () => {
  const page = await agent.get(`/dashboard/accounts/${accountId}`);
  expect(page.statusCode).toBe(200);
  expect(page.body).toContain(`href="/dashboard/accounts/${accountId}/statement"`);
  const pdf = await agent.get(`/dashboard/accounts/${accountId}/statement`);
  expect(pdf.statusCode).toBe(200);
  expect(pdf.headers['content-type']).toBe('application/pdf');
  expect(pdf.headers['content-disposition']).toMatch(/^attachment; filename="statement_/);
  expect(pdf.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
  const stranger = new Agent(t);
  await stranger.signup(`stranger+${newId().slice(-12)}@example.com`);
  expect((await stranger.get(`/dashboard/accounts/${accountId}/statement`)).statusCode).toBe(404);
});
