import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { Agent } from '../dashboard-agent.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';

/** A new business's empty lists say what to do next; copy buttons and the phone menu are plain HTML. */
let t: TestApp;
let agent: Agent;
let secret: string;

beforeAll(async () => {
  t = await startTestApp();
  agent = new Agent(t);
  await agent.signup(`empty+${newId().slice(-12)}@example.com`);
  await agent.get('/dashboard/keys');
  secret = agent.textOf('new-secret-sandbox')!;
});
afterAll(() => t.close());

/** The text of the page's copyable command (`<code id="…">`), entities decoded. */
function command(body: string, id: string): string {
  const m = new RegExp(`<code id="${id}">([^<]*)</code>`).exec(body);
  return (m?.[1] ?? '')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

describe('empty states and copy buttons', () => {
  it('gives every empty list its next step, with a command to copy where the API does it', async () => {
    const expected: [string, string, boolean][] = [
      ['customers', 'create one with <code>POST /v1/customers</code>', true],
      ['accounts', 'open one with <code>POST /v1/accounts</code>', true],
      ['transfers', '<code>POST /v1/transfer</code>', true],
      ['transactions', 'Fund a sandbox account', true],
      ['cards', '<code>POST /v1/cards</code>', false],
      ['webhooks', 'add one with the form above', false],
      ['events', 'Create a customer', false],
      ['requests', 'Send one', true],
      ['approvals', 'Nothing is waiting for approval.', false],
    ];
    for (const [section, text, curl] of expected) {
      const res = await agent.get(`/dashboard/${section}`);
      expect(res.statusCode, section).toBe(200);
      expect(res.body, section).toContain('class="empty-state"');
      expect(res.body, section).toContain(text);
      expect(res.body.includes('data-copy="empty-curl"'), section).toBe(curl);
    }
    const customers = command((await agent.get('/dashboard/customers')).body, 'empty-curl');
    expect(customers).toMatch(/^curl -s -X POST "http:\/\/[^/]+\/v1\/customers" \\\n {2}-H "Api-Key: \$KEY"/);
    expect(customers).toContain(`-H "Idempotency-Key: $(node -p 'crypto.randomUUID()')"`);
    // The body in the command is the API's own example: it parses and the API accepts it.
    const body = JSON.parse(/-d '([^']*)'/.exec(customers)![1]!) as Record<string, unknown>;
    expect((await clientFor(t, secret).post('/v1/customers', body)).status).toBe(200);
  });

  it('keeps "none match" for a filtered list', async () => {
    const res = await agent.get('/dashboard/transfers?status=failed');
    expect(res.body).toContain('No transfers in this environment match');
    expect(res.body).not.toContain('class="empty-state"');
    expect((await agent.get('/dashboard/requests?method=DELETE')).body).toContain('No API requests match.');
  });

  it('puts a copy button beside ids and shortens the request log ids, whole in title and copy', async () => {
    const api = clientFor(t, secret);
    const customer = await api.post('/v1/customers', johnDoe());
    expect(customer.status).toBe(200);
    const id = customer.body.data.id as string;
    const list = await agent.get('/dashboard/customers');
    // Beside a name the button says what it copies.
    expect(list.body).toMatch(new RegExp(`data-copy-text="${id}" aria-label="Copy customer id ${id}">Copy id</button>`));
    await t.app.requestLog!.flush();
    const log = await agent.get('/dashboard/requests');
    const m = /<code class="id trunc" title="([^"]+)">([^<]+)<\/code>/.exec(log.body)!;
    expect(m[2]).toBe(`${m[1]!.slice(0, 8)}…${m[1]!.slice(-6)}`);
    expect(log.body).toContain(`data-copy-text="${m[1]}"`);
  });

  it('shows the keys page curl with the new key once, and with $KEY afterwards', async () => {
    const fresh = new Agent(t);
    await fresh.signup(`curl+${newId().slice(-12)}@example.com`);
    const first = await fresh.get('/dashboard/keys');
    const secret = fresh.textOf('new-secret-sandbox')!;
    expect(command(first.body, 'curl-sandbox')).toMatch(
      new RegExp(`^curl -s "http://[^"]+/v1/customers" \\\\\\n {2}-H "Api-Key: ${secret}"$`),
    );
    const again = await fresh.get('/dashboard/keys');
    expect(again.body).not.toContain(secret);
    expect(command(again.body, 'curl-try')).toContain('-H "Api-Key: $KEY"');
  });

  it('collapses the navigation behind a menu toggle that needs no script', async () => {
    const page = (await agent.get('/dashboard/overview')).body;
    expect(page).toMatch(/<input type="checkbox" id="nav-toggle" class="nav-toggle"[^>]*>\s*<label for="nav-toggle"/);
    expect(page).toContain('<ul id="nav-links">');
    expect(page).not.toMatch(/<script>|\son(click|change)=/);
  });
});
