import type { BrowserContext, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { hasChromium, startBrowserStand, type BrowserStand } from '../browser-stand.js';
import { clientFor, type Client } from '../harness.js';
import { liveCaseInReview, nextCode, operator, PASSWORD } from './helpers.js';

/**
 * The operator console in Debian's headless Chromium against the app on 127.0.0.1 (skipped, with
 * a message, where /usr/bin/chromium is missing): an analyst with a second factor decides the
 * oldest case and the business's webhook receiver gets the event.
 */
let stand: BrowserStand | undefined;
let biz: CreatedTenant;
let live: Client;
let sandbox: Client;
let webhookSecret: string;

beforeAll(async () => {
  if (!hasChromium) return;
  stand = await startBrowserStand();
  biz = await stand.t.tenant('Browser Bank');
  live = clientFor(stand.t, biz.live.secret_key);
  sandbox = clientFor(stand.t, biz.sandbox.secret_key);
  // Live endpoints must be public HTTPS (no loopback receiver): the decided case is a sandbox one,
  // sent to manual review by the sandbox's simulation; the decision's code path is the same.
  const endpoint = await sandbox.post('/v1/webhooks/endpoints', { url: stand.receiver.url, event_types: ['customer.kyc.status.approved'] });
  expect(endpoint.status).toBe(201);
  webhookSecret = endpoint.body.data.secret as string;
});
afterAll(async () => stand?.close());

async function logIn(context: BrowserContext, email: string, code = ''): Promise<Page> {
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${stand!.base}/ops/login`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  if (code) await page.getByLabel('Authentication code').fill(code);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL(/\/ops\/(kyc|payouts)$/);
  return page;
}

describe.skipIf(!hasChromium)('operator console in a browser', () => {
  it('an analyst logs in with TOTP, approves the oldest case after seeing the passport; the webhook gets the event; a second analyst’s reject is refused', async () => {
    const { t, browser, base, receiver } = stand!;
    const oldest = await liveCaseInReview(t, sandbox, { first_name: 'Oldest', last_name: 'Applicant' }, true);
    await liveCaseInReview(t, live, { first_name: 'Later', last_name: 'Applicant' });
    const analyst = await operator(t, 'compliance', { totp: true });
    const second = await operator(t, 'compliance');

    const context = await browser.newContext();
    // Without the code the log-in is refused.
    const refused = await context.newPage();
    await refused.goto(`${base}/ops/login`);
    await refused.getByLabel('Email').fill(analyst.email);
    await refused.getByLabel('Password').fill(PASSWORD);
    await refused.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => refused.getByRole('alert').textContent()).toContain('authentication code');
    await refused.close();

    const page = await logIn(context, analyst.email, nextCode(analyst.secret!));
    const rows = page.locator('main table tbody tr');
    expect(await rows.count()).toBe(2);
    await rows.first().getByRole('link').first().click();
    await page.waitForURL(`${base}/ops/kyc/${oldest.caseId}`);
    await expect.poll(() => page.locator('h1').textContent()).toContain('Oldest Applicant');

    const passport = page.locator('figure[data-doc-type="PASSPORT"] img');
    await passport.scrollIntoViewIfNeeded();
    await expect
      .poll(() => passport.evaluate((img) => (img as unknown as { complete: boolean; naturalWidth: number }).naturalWidth))
      .toBeGreaterThan(0);
    const response = await context.request.get(`${base}${await passport.getAttribute('src')}`);
    expect(response.headers()['cache-control']).toBe('no-store');

    // The second analyst has the same case open when the first one approves it.
    const context2 = await browser.newContext();
    const page2 = await logIn(context2, second.email);
    await page2.goto(`${base}/ops/kyc/${oldest.caseId}`);

    const before = receiver.received.length;
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${base}/ops/kyc/${oldest.caseId}`);
    await expect.poll(() => page.locator('main').textContent()).toContain('This case is approved');

    await page2.getByLabel('Reason', { exact: true }).fill('looks forged');
    await page2.getByRole('button', { name: 'Reject' }).click();
    await expect.poll(() => page2.getByRole('alert').textContent()).toContain('decided or changed by someone else');
    expect(await page2.locator('main').textContent()).toContain('approved');

    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBeGreaterThan(before);
    const delivered = receiver.received.slice(before).map(
      (r) =>
        new Webhook(webhookSecret).verify(r.body, r.headers as Record<string, string>) as {
          event_type: string;
          event_data: { id: string; kyc_status: string };
        },
    );
    expect(delivered).toEqual([
      expect.objectContaining({
        event_type: 'customer.kyc.status.approved',
        event_data: expect.objectContaining({ id: oldest.customerId }),
      }),
    ]);
    expect((await sandbox.get(`/v1/customers/${oldest.customerId}`)).body.data.kyc_status).toBe('approved');
    await context.close();
    await context2.close();
  });

  it('an operations user sees the case without its documents and cannot open them', async () => {
    const { t, browser, base } = stand!;
    const c = await liveCaseInReview(t, live, { first_name: 'Private', last_name: 'Papers' });
    const compliance = await operator(t, 'compliance');
    const docId = (await t.db.selectFrom('kyc_documents').select('id').where('customer_id', '=', c.customerId).executeTakeFirstOrThrow())
      .id;
    const ops = await operator(t, 'operations');
    const context = await browser.newContext();
    const page = await logIn(context, ops.email);
    await page.goto(`${base}/ops/kyc/${c.caseId}`);
    expect(await page.locator('figure img').count()).toBe(0);
    expect(await page.locator('main').textContent()).toContain('Only compliance operators see the documents');
    const direct = await page.goto(`${base}/ops/kyc/documents/${docId}`);
    expect(direct!.status()).toBe(403);
    expect(await page.locator('main').textContent()).toContain('does not allow');
    await context.close();
    expect(compliance.email).toBeTruthy();
  });

  it('a business user’s dashboard session cannot open /ops', async () => {
    const { browser, base } = stand!;
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/signup`);
    await page.getByLabel('Business name').fill('Dash Browser Co');
    await page.getByLabel('Email').fill(`dash+${newId().slice(-12)}@example.com`);
    await page.getByLabel(/^Password/).fill('correct horse battery');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${base}/dashboard/keys`);
    for (const path of ['/ops/kyc', '/ops/payouts', '/ops/businesses', '/ops/audit']) {
      await page.goto(`${base}${path}`);
      expect(page.url()).toBe(`${base}/ops/login`);
    }
    await context.close();
  });
});
