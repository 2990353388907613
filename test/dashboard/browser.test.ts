import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { hasChromium, startBrowserStand, type BrowserStand } from '../browser-stand.js';
import { johnDoe } from '../harness.js';
import type { Receiver } from '../webhooks/receiver.js';

/**
 * The dashboard in a real headless Chromium (Debian's /usr/bin/chromium, never a downloaded
 * browser) against the app listening on 127.0.0.1. Skipped, with a message, where it is missing.
 */
let browser: Browser;
let base: string;
let receiver: Receiver;
let stand: BrowserStand | undefined;

beforeAll(async () => {
  if (!hasChromium) return;
  stand = await startBrowserStand();
  ({ browser, base, receiver } = stand);
});
afterAll(async () => stand?.close());

/** Calls the API over real HTTP with a key read from the page. */
async function api(key: string, path: string, init: RequestInit = {}) {
  const res = await fetch(`${base}${path}`, { ...init, headers: { 'api-key': key, ...(init.headers ?? {}) } });
  return { status: res.status, body: (await res.json()) as { data: any; error: { code: string } | null } };
}

async function signUp(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${base}/dashboard/signup`);
  await page.getByLabel('Business name').fill('Browser Co');
  await page.getByLabel('Email').fill(`browser+${newId().slice(-12)}@example.com`);
  await page.getByLabel(/^Password/).fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${base}/dashboard/keys`);
  return page;
}

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  return context;
}

describe.skipIf(!hasChromium)('dashboard in a browser', () => {
  it('signs up, copies the keys shown once and uses them on the API', async () => {
    const context = await newContext();
    const page = await signUp(context);
    const secret = (await page.locator('#new-secret-sandbox').textContent())!.trim();
    expect(secret).toMatch(/^sk_sandbox_\w{43}$/);
    expect(await page.locator('#new-secret-live').textContent()).toMatch(/^sk_live_/);

    await page.locator('button[data-copy="new-secret-sandbox"]').click();
    await expect.poll(() => page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);
    await page.locator('button[data-copy="public-key"]').click();
    const publicKey = await page.evaluate<string>('navigator.clipboard.readText()');
    expect(publicKey).toMatch(/^pk_sandbox_\w{43}$/);

    expect((await api(secret, '/v1/customers')).status).toBe(200);
    expect((await api(publicKey, '/v1/customers')).body.error?.code).toBe('secret_key_required');

    await page.reload();
    expect(await page.locator('#new-secret-sandbox').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    await context.close();
  });

  it('rotates the keys with "now": the old secret key is refused, the new one works', async () => {
    const context = await newContext();
    const page = await signUp(context);
    const old = (await page.locator('#new-secret-sandbox').textContent())!.trim();
    expect((await api(old, '/v1/customers')).status).toBe(200);

    await page.getByLabel('Old keys expire').selectOption({ label: 'Now' });
    await page.getByRole('button', { name: 'Rotate sandbox keys' }).click();
    await page.waitForURL(`${base}/dashboard/keys`);
    const fresh = (await page.locator('#new-secret-sandbox').textContent())!.trim();
    expect(fresh).not.toBe(old);
    expect((await api(fresh, '/v1/customers')).status).toBe(200);
    // The API caches a key lookup for up to two seconds, so the refusal may take that long.
    await expect
      .poll(async () => (await api(old, '/v1/customers')).body.error?.code, { timeout: 5000, interval: 250 })
      .toBe('expired_api_key');
    await context.close();
  });

  it('switches between sandbox and live and shows only that environment, by keyboard too', async () => {
    const context = await newContext();
    const page = await signUp(context);
    const sandboxKey = (await page.locator('#new-secret-sandbox').textContent())!.trim();
    const liveKey = (await page.locator('#new-secret-live').textContent())!.trim();
    for (const [key, first] of [
      [sandboxKey, 'Sandy'],
      [liveKey, 'Livia'],
    ] as const) {
      const res = await api(key, '/v1/customers', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': newId() },
        body: JSON.stringify(johnDoe({ first_name: first })),
      });
      expect(res.status).toBe(200);
    }

    await page.getByRole('link', { name: 'Customers' }).click();
    await expect.poll(() => page.locator('main').textContent()).toContain('Sandy Doe');
    expect(await page.locator('main').textContent()).not.toContain('Livia');

    // Keyboard only: focus the Live button and press Enter.
    await page.getByRole('button', { name: 'Live' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/dashboard/customers`);
    await expect.poll(() => page.locator('#env-badge').textContent()).toBe('Live data');
    expect(await page.locator('main').textContent()).toContain('Livia Doe');
    expect(await page.locator('main').textContent()).not.toContain('Sandy');

    await page.getByRole('link', { name: 'API keys' }).click();
    expect(await page.locator('main').textContent()).toContain('sk_live_…');
    expect(await page.locator('main').textContent()).not.toContain('sk_sandbox_');
    await page.getByRole('link', { name: 'Business' }).click();
    expect(await page.locator('#tenant-id').textContent()).toMatch(/^[0-9a-f-]{36}$/);
    await context.close();
  });

  it('creates a webhook endpoint whose signed deliveries arrive, then resends one', async () => {
    const context = await newContext();
    const page = await signUp(context);
    const key = (await page.locator('#new-secret-sandbox').textContent())!.trim();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('customer.created').check();
    await page.getByRole('button', { name: 'Generate' }).click();
    const secret = (await page.locator('#webhook-secret').textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);

    const before = receiver.received.length;
    const created = await api(key, '/v1/customers', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': newId() },
      body: JSON.stringify(johnDoe()),
    });
    expect(created.status).toBe(200);
    await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(before + 1);
    const first = receiver.received[before]!;
    const payload = new Webhook(secret).verify(first.body, first.headers as Record<string, string>) as {
      event_type: string;
      event_data: { id: string };
    };
    expect(payload.event_type).toBe('customer.created');
    expect(payload.event_data.id).toBe(created.body.data.id);

    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('main').textContent();
        },
        { timeout: 10_000 },
      )
      .toContain('sent');
    await page.getByRole('button', { name: 'Resend customer.created event' }).click();
    await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(before + 2);
    const again = receiver.received[before + 1]!;
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(() => new Webhook(secret).verify(again.body, again.headers as Record<string, string>)).not.toThrow();

    await page.getByRole('link', { name: 'customer.created' }).click();
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('table tbody tr').count();
        },
        { timeout: 10_000 },
      )
      .toBe(2);
    expect(await page.locator('table tbody').textContent()).toContain('manual');
    expect(await page.locator('pre.payload').textContent()).toContain(created.body.data.id);
    await context.close();
  });
});
