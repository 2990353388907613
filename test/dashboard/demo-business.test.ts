import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDemoBusiness } from '../../src/dashboard/service.js';
import { Agent } from '../dashboard-agent.js';
import { startTestApp, type TestApp } from '../harness.js';

/** The demo business of a first start can see its own public keys on the keys page. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('demo business', () => {
  it('shows its public key on the keys page', async () => {
    const login = { email: `demo+${Date.now()}@example.com`, password: 'correct horse battery' };
    const demo = await createDemoBusiness(t.db, (work) => t.db.transaction().execute(work), login);
    const agent = new Agent(t);
    await agent.get('/dashboard/login');
    const res = await agent.post('/dashboard/login', login);
    expect(res.statusCode).toBe(303);
    const keys = await agent.get('/dashboard/keys');
    expect(keys.statusCode).toBe(200);
    expect(keys.body).toContain(demo.sandbox.public_key);
    expect(keys.body).not.toContain(demo.sandbox.secret_key);
  });
});
