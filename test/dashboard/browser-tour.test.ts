import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { hasChromium, startBrowserStand, type BrowserStand } from '../browser-stand.js';
import { johnDoe } from '../harness.js';

/**
 * A newcomer's first minutes in Debian's Chromium: sign up, read the overview's checklist, copy the
 * curl of the keys page and run it, see the checklist tick and the request chart move; then every
 * main page at desktop and phone width, saved as screenshots for review (test-results/, ignored
 * by git). One browser and one page throughout, to stay quick.
 */
const SHOTS = join(process.cwd(), 'test-results', 'screenshots');
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let stand: BrowserStand | undefined;
let context: BrowserContext;
let page: Page;

beforeAll(async () => {
  if (!hasChromium) return;
  mkdirSync(SHOTS, { recursive: true });
  stand = await startBrowserStand();
  context = await stand.browser.newContext({ viewport: DESKTOP });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stand.base });
  page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
});
afterAll(async () => stand?.close());

const base = () => stand!.base;

async function api(key: string, path: string, body?: unknown) {
  const res = await fetch(`${base()}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      'api-key': key,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'idempotency-key': newId() }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: { id: string } };
  expect(res.ok, `${path}: ${JSON.stringify(json)}`).toBe(true);
  return json.data;
}

/** Runs a copied `curl -s "URL" -H "Name: value" …` (GET only) with fetch. */
async function runCurl(command: string) {
  const url = /curl -s "([^"]+)"/.exec(command)?.[1];
  const headers = Object.fromEntries([...command.matchAll(/-H "([^:]+): ([^"]+)"/g)].map((m) => [m[1]!, m[2]!]));
  expect(url).toBeDefined();
  return fetch(url!, { headers });
}

async function checklistStep(key: string) {
  return page.locator(`[data-step="${key}"]`).getAttribute('data-done');
}

/** The bars of the requests chart, as their titles ("2026-01-02: 3"). */
async function requestBars() {
  return page.locator('svg[aria-label^="API requests per day"] rect.chart-bar title').allTextContents();
}

/** How far the page is wider than the window (0: no horizontal scrolling). */
async function pageOverflow() {
  return page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
}

async function shot(name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

describe.skipIf(!hasChromium)('a newcomer in the dashboard', () => {
  let secret = '';
  let customerId = '';

  it('signs up, copies the curl of the keys page, runs it and sees the checklist tick', async () => {
    await page.goto(`${base()}/dashboard/signup`);
    await page.getByLabel('Business name').fill('Tour Co');
    await page.getByLabel('Email').fill(`tour+${newId().slice(-12)}@example.com`);
    await page.getByLabel(/^Password/).fill('correct horse battery');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(`${base()}/dashboard/keys`);
    secret = (await page.locator('#new-secret-sandbox').textContent())!.trim();

    const copy = page.locator('button[data-copy="curl-sandbox"]');
    await copy.click();
    await expect.poll(() => copy.textContent()).toBe('Copied');
    const command = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(command).toContain(secret);

    await page.getByRole('link', { name: 'Overview' }).click();
    expect(await checklistStep('request')).toBe('false');
    const before = await requestBars();
    expect(before.at(-1)).toMatch(/: 0$/);
    await shot('overview-before-desktop');

    const res = await runCurl(command);
    expect(res.status).toBe(200);
    // The request log is written a moment after the answer: reload until it shows, as a person would.
    await expect
      .poll(
        async () => {
          await page.reload();
          return checklistStep('request');
        },
        { timeout: 5000, interval: 200 },
      )
      .toBe('true');
    const after = await requestBars();
    expect(after.at(-1)).toMatch(/: 1$/);
    expect(after.slice(0, -1)).toEqual(before.slice(0, -1));
  });

  it('shows a next step with a copyable command on an empty list, by keyboard too', async () => {
    await page.goto(`${base()}/dashboard/customers`);
    const empty = page.locator('.empty-state');
    expect(await empty.textContent()).toContain('POST /v1/customers');
    await page.locator('.empty-state button[data-copy="empty-curl"]').focus();
    await page.keyboard.press('Enter');
    const command = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(command).toMatch(/^curl -s -X POST "http:\/\/127\.0\.0\.1:\d+\/v1\/customers"/);
    expect(command).toContain('"Api-Key: $KEY"');
    await shot('customers-empty-desktop');
  });

  it('copies an id from a table', async () => {
    const customer = await api(secret, '/v1/customers', johnDoe({ first_name: 'Ada' }));
    customerId = customer.id;
    await api(secret, `/v1/simulations/kyc/${customerId}`, { outcome: 'approved' });
    const main = await api(secret, '/v1/accounts', { currency: 'NGN', label: 'main', customer_id: customerId });
    const treasury = await api(secret, '/v1/accounts', { currency: 'NGN', label: 'treasury' });
    await api(secret, `/v1/simulations/accounts/${main.id}/fund`, { amount: '1000.00' });
    const transfer = {
      source: { id: main.id },
      destination: { destination_type: 'internal_account', id: treasury.id },
      amount: '250.50',
    };
    await api(secret, '/v1/transfer', transfer);
    await api(secret, '/v1/webhooks/endpoints', { url: stand!.receiver.url });
    await stand!.t.app.requestLog!.flush();

    await page.goto(`${base()}/dashboard/customers`);
    const button = page.locator(`button[data-copy-text="${customerId}"]`).first();
    await button.click();
    await expect.poll(() => button.textContent()).toBe('Copied');
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(customerId);
  });

  const pages = () => [
    ['overview', '/dashboard/overview'],
    ['customers', '/dashboard/customers'],
    ['customer', `/dashboard/customers/${customerId}`],
    ['accounts', '/dashboard/accounts'],
    ['transfers', '/dashboard/transfers'],
    ['requests', '/dashboard/requests'],
    ['keys', '/dashboard/keys'],
    ['webhooks', '/dashboard/webhooks'],
  ];

  it('fits the request log at 1280 px and saves each page at desktop width', async () => {
    await page.setViewportSize(DESKTOP);
    for (const [name, path] of pages()) {
      await page.goto(`${base()}${path}`);
      await shot(`${name}-desktop`);
    }
    await page.goto(`${base()}/dashboard/requests`);
    expect(await page.locator('.requests-table tbody tr').count()).toBeGreaterThan(5);
    const table = page.locator('.requests-table .table-wrap');
    expect(await table.evaluate((wrap) => wrap.scrollWidth - wrap.clientWidth)).toBe(0);
    expect(await pageOverflow()).toBe(0);
    // The cut values stay whole in their title and in what the copy button copies.
    const cut = page.locator('.requests-table code.trunc').first();
    const full = (await cut.getAttribute('title'))!;
    expect(full.length).toBeGreaterThan(0);
    expect(await page.locator(`.requests-table button[data-copy-text="${full}"]`).count()).toBeGreaterThan(0);
    expect(await page.locator('#nav-links').isVisible()).toBe(true);
  });

  it('collapses the navigation at phone width and saves each page there', async () => {
    await page.setViewportSize(PHONE);
    for (const [name, path] of pages()) {
      await page.goto(`${base()}${path}`);
      await shot(`${name}-phone`);
      expect(await page.locator('#nav-links').isVisible(), name).toBe(false);
      expect(await pageOverflow(), name).toBe(0);
    }
    await page.getByText('Menu', { exact: false }).first().click();
    expect(await page.locator('#nav-links').isVisible()).toBe(true);
    await shot('menu-open-phone');
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.waitForURL(`${base()}/dashboard/customers`);
    expect(await page.locator('#nav-links').isVisible()).toBe(false);
  });
});
