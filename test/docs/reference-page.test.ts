import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, startBrowserStand, type BrowserStand } from '../browser-stand.js';

/**
 * The API reference at /docs in Debian's Chromium: it renders quickly, and "Execute" on a POST
 * sends it with the pre-filled Idempotency-Key and example body, and the API accepts it.
 */
let stand: BrowserStand | undefined;

beforeAll(async () => {
  if (!hasChromium) return;
  stand = await startBrowserStand();
});
afterAll(async () => stand?.close());

describe.skipIf(!hasChromium)('API reference page', () => {
  it('renders fast and sends a POST that the API accepts, and again without a replay', async () => {
    const { browser, base, t } = stand!;
    const biz = await t.tenant('Docs Co');
    const key = biz.sandbox.secret_key;
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });

    // The first load warms the server's copy of the document and the browser's caches; the
    // second is what a reader waits for. Its time is printed, not asserted (timings belong in bench/).
    for (const load of ['first', 'second']) {
      const started = Date.now();
      await page.goto(`${base}/docs`);
      await page.locator('body[data-ready="true"] #operations-tag-Customers').waitFor({ timeout: 30_000 });
      const renderMs = Date.now() - started;
      console.log(`reference page rendered in ${renderMs} ms (${load} load)`);
    }
    expect(await page.title()).toContain('Financial Services API');
    expect(await page.locator('.docs-header img').count()).toBe(1);

    await page.getByRole('button', { name: 'Authorize' }).first().click();
    await page.locator('.auth-container input').first().fill(key);
    await page.locator('.auth-btn-wrapper button.authorize').click();
    await page.locator('.auth-btn-wrapper button.btn-done').click();

    await page.locator('#operations-tag-Customers').click();
    const op = page.locator('#operations-Customers-post_v1_customers');
    await op.locator('.opblock-summary').first().click();
    const header = op.locator('tr[data-param-name="Idempotency-Key"] input');
    await header.waitFor();
    const prefilled = await header.inputValue();
    expect(prefilled).toMatch(/^docs-[0-9a-f-]{36}$/);

    await op.locator('button.execute').click();
    await expect
      .poll(async () => (await op.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim())
      .toBe('200');

    const list = (await fetch(`${base}/v1/customers`, { headers: { 'api-key': key } }).then((r) => r.json())) as {
      data: { items: { email: string }[] };
    };
    expect(list.data.items.map((c: { email: string }) => c.email)).toEqual(['john.doe@example.com']);

    // Sent again from the same page: a fresh key, so the request runs afresh (the email is now
    // taken: 409) instead of replaying the stored 200.
    await op
      .locator('button.btn-clear')
      .click()
      .catch(() => undefined);
    await op.locator('button.execute').click();
    await expect
      .poll(async () => (await op.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim())
      .toBe('409');
    expect(errors.filter((e) => !/favicon|status of 409/.test(e))).toEqual([]);
    await page.close();
  }, 60_000);
});
