import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { hasChromium, startBrowserStand, type BrowserStand } from '../browser-stand.js';

/**
 * The Approvals page in a real headless Chromium: an owner turns FX approvals on, an order made
 * with the API waits, the owner approves it with the button and the order executes; another is
 * rejected with a reason after the confirmation dialog. Skipped where /usr/bin/chromium is missing.
 */
let browser: Browser;
let base: string;
let stand: BrowserStand | undefined;

beforeAll(async () => {
  if (!hasChromium) return;
  stand = await startBrowserStand();
  ({ browser, base } = stand);
});
afterAll(async () => stand?.close());

async function api(key: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': newId() }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as { data: any; error: { code: string } | null } };
}

async function signUp(): Promise<{ page: Page; key: string }> {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${base}/dashboard/signup`);
  await page.getByLabel('Business name').fill('Approvals Co');
  await page.getByLabel('Email').fill(`approvals+${newId().slice(-12)}@example.com`);
  await page.getByLabel(/^Password/).fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${base}/dashboard/keys`);
  return { page, key: (await page.locator('#new-secret-sandbox').textContent())!.trim() };
}

describe.skipIf(!hasChromium)('approvals in a browser', () => {
  it('turns FX approvals on, approves one waiting order and rejects another', async () => {
    const { page, key } = await signUp();
    await page.getByRole('link', { name: 'Approvals', exact: true }).click();
    await page.getByLabel('FX orders').check();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(`${base}/dashboard/approvals`);
    expect(await page.getByLabel('FX orders').isChecked()).toBe(true);

    const usd = (await api(key, '/v1/accounts', { currency: 'USD', label: 'Treasury USD' })).body.data.id;
    const ngn = (await api(key, '/v1/accounts', { currency: 'NGN', label: 'Treasury NGN' })).body.data.id;
    expect((await api(key, `/v1/simulations/accounts/${usd}/fund`, { amount: '100.00' })).status).toBe(200);
    const order = (amount: string) =>
      api(key, '/v1/fx/orders', {
        order_type: 'market',
        side: 'sell',
        pair: { base: 'USD', quote: 'NGN' },
        amount,
        source_id: usd,
        destination_id: ngn,
      });
    const first = (await order('10.00')).body.data;
    expect(first.status).toBe('waiting_approval');
    const second = (await order('20.00')).body.data;

    // On a phone the page fits its width (the table scrolls inside its own box).
    await page.setViewportSize({ width: 375, height: 740 });
    await page.reload();
    expect(await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1')).toBe(true);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: `Approve FX order ${first.id}` }).click();
    await page.waitForURL(`${base}/dashboard/approvals`);
    expect((await api(key, `/v1/fx/orders/${first.id}`)).body.data.status).toBe('completed');

    await page.getByLabel(`Reason for rejecting FX order ${second.id}`).fill('not this week');
    await page.getByRole('button', { name: `Reject FX order ${second.id}` }).click();
    await page.waitForURL(`${base}/dashboard/approvals`);
    expect(await page.getByText('Nothing is waiting for approval.').isVisible()).toBe(true);
    expect((await api(key, `/v1/fx/orders/${second.id}`)).body.data).toMatchObject({
      status: 'rejected',
      rejection_reason: 'not this week',
    });
    expect((await api(key, `/v1/accounts/${usd}`)).body.data).toMatchObject({ balance: '90.00', available_balance: '90.00' });
  });
});
