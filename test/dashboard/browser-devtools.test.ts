import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { listInstitutions } from '../../src/lib/institutions.js';
import { nubanCheckDigit } from '../../src/lib/payee-validation.js';
import { remitter } from '../payout-fixtures.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { clientFor, johnDoe, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';
import { hasChromium, startBrowserStand, type BrowserStand } from '../browser-stand.js';
import type { Receiver } from '../webhooks/receiver.js';

/**
 * The developer's dashboard in Debian's Chromium: the request log, events with their deliveries
 * and resend, the team and its roles, and the detail pages, by visible labels, at phone width too.
 */
let t: TestApp;
let browser: Browser;
let base: string;
let receiver: Receiver;
let stand: BrowserStand | undefined;

beforeAll(async () => {
  if (!hasChromium) return;
  // Sandbox payouts wait for the simulation calls below instead of settling on their own.
  stand = await startBrowserStand({ SANDBOX_RAIL_DELAY_MS: 600_000 });
  ({ t, browser, base, receiver } = stand);
});
afterAll(async () => stand?.close());

async function newPage(context?: BrowserContext): Promise<Page> {
  const page = await (context ?? (await browser.newContext())).newPage();
  page.on('dialog', (d) => void d.accept());
  return page;
}

async function signUp(): Promise<{ page: Page; sandbox: Client; live: Client }> {
  const page = await newPage();
  await page.goto(`${base}/dashboard/signup`);
  await page.getByLabel('Business name').fill('Devtools Co');
  await page.getByLabel('Email').fill(`dev+${newId().slice(-12)}@example.com`);
  await page.getByLabel(/^Password/).fill('correct horse battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await page.waitForURL(`${base}/dashboard/keys`);
  const key = async (env: string) => (await page.locator(`#new-secret-${env}`).textContent())!.trim();
  return { page, sandbox: clientFor(t, await key('sandbox')), live: clientFor(t, await key('live')) };
}

const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;

/** A customer (KYC approved) with a funded account. */
async function fundedCustomer(api: Client) {
  const customerId = (await api.post('/v1/customers', johnDoe())).body.data.id as string;
  await approveKyc(api, customerId);
  const account = (await api.post('/v1/accounts', { currency: 'NGN', label: 'Payouts', customer_id: customerId })).body.data.id as string;
  expect((await api.post(`/v1/simulations/accounts/${account}/fund`, { amount: '10000.00' })).status).toBe(200);
  return { customerId, account };
}

/** A funded customer and a verified payee: what a payout needs. */
async function payoutSetup(api: Client) {
  const { customerId, account } = await fundedCustomer(api);
  const serial = `${String(Date.now()).slice(-6)}123`;
  const payee = await api.post('/v1/external-accounts', {
    payee_type: 'bank_account',
    account_number: serial + String(nubanCheckDigit('058', serial)),
    account_name: 'Amina Bello',
    currency: 'NGN',
    customer_id: customerId,
    institution_id: gtb.id,
  });
  expect(payee.status, payee.text).toBe(202);
  // The sandbox rail would answer the name enquiry after SANDBOX_RAIL_DELAY_MS: make it due now.
  await t.db.updateTable('external_accounts').set({ verify_after: new Date() }).where('id', '=', payee.body.data.id).execute();
  await verifyDuePayees(t.db, t.unitOfWork, { SANDBOX_RAIL_DELAY_MS: 0 });
  return { customerId, account, payee: payee.body.data.id as string };
}

describe.skipIf(!hasChromium)('the developer dashboard in a browser', () => {
  it('finds a failed transfer by its request id, reads its body, sees its event, resends the webhook; a viewer is refused the keys page', async () => {
    const { page, sandbox } = await signUp();
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Generate' }).click();
    await expect.poll(() => page.locator('#webhook-secret').count()).toBe(1);

    const { customerId, account, payee } = await payoutSetup(sandbox);
    const created = await sandbox.post('/v1/transfer', {
      source: { source_type: 'internal_account', id: account },
      destination: { destination_type: 'external_account', id: payee },
      amount: '2500.00',
      description: 'supplier invoice 42',
      customer_id: customerId,
      additional_information: remitter,
    });
    expect(created.status, created.text).toBe(200);
    const transferId = created.body.data.id as string;
    const requestId = String(created.headers['x-request-id']);
    expect((await sandbox.post(`/v1/simulations/transfers/${transferId}/fail`, { reason: 'Account closed' })).status).toBe(200);
    // The endpoint gets the failure event before the developer goes looking.
    await expect
      .poll(() => receiver.received.filter((r) => JSON.parse(r.body).event_type === 'transfer.status.failed').length, { timeout: 15_000 })
      .toBe(1);
    const delivered = receiver.received.length;

    await page.getByRole('link', { name: 'Request log' }).click();
    await page.getByLabel('Request id', { exact: true }).fill(requestId);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByRole('link', { name: '/v1/transfer' }).first().click();
    await expect.poll(() => page.locator('#request-id').textContent()).toBe(requestId);
    expect(await page.getByRole('heading', { name: 'Request body' }).isVisible()).toBe(true);
    expect(await page.locator('pre[aria-labelledby="request-body"]').textContent()).toContain('supplier invoice 42');
    expect(await page.locator('pre[aria-labelledby="response-body"]').textContent()).toContain(transferId);

    await page.getByRole('link', { name: 'transfer.status.failed' }).click();
    expect(await page.locator('pre.payload').textContent()).toContain('Account closed');
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('.delivery').textContent();
        },
        { timeout: 10_000 },
      )
      .toContain('200');
    await page.getByRole('button', { name: `Resend to ${receiver.url}` }).click();
    await expect.poll(() => receiver.received.length, { timeout: 10_000 }).toBe(delivered + 1);
    expect(JSON.parse(receiver.received[delivered]!.body).event_type).toBe('transfer.status.failed');
    await expect
      .poll(
        async () => {
          await page.reload();
          return page.locator('.delivery tbody').textContent();
        },
        { timeout: 10_000 },
      )
      .toContain('manual');

    // The transfer's own page shows the same story as a timeline.
    // Ids in tables are shortened in the middle; the link is found by where it leads.
    await page.locator(`a[href="/dashboard/transfers/${transferId}"]`).first().click();
    await expect.poll(() => page.locator('ol.timeline').textContent()).toContain('transfer.status.failed');

    // A viewer joins through an invitation link and is refused the keys.
    await page.getByRole('link', { name: 'Team' }).click();
    const viewerEmail = `viewer+${newId().slice(-12)}@example.com`;
    await page.getByLabel('Email').fill(viewerEmail);
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Invite' }).click();
    const link = (await page.locator('#one-time-link').textContent())!.trim();
    const viewer = await newPage();
    await viewer.goto(link);
    await viewer.getByLabel(/^Password/).fill('viewer password 123');
    await viewer.getByRole('button', { name: 'Join' }).click();
    await viewer.waitForURL(`${base}/dashboard/overview`);
    expect(await viewer.getByRole('link', { name: 'API keys' }).count()).toBe(0);
    const refused = await viewer.goto(`${base}/dashboard/keys`);
    expect(refused?.status()).toBe(403);
    expect(await viewer.getByRole('heading', { name: 'Forbidden' }).isVisible()).toBe(true);
    // The owner makes the viewer a developer from the team page; the next page load shows it.
    await page.goto(`${base}/dashboard/team`);
    await page.getByLabel(`Role of ${viewerEmail}`, { exact: true }).selectOption('developer');
    await page.getByRole('button', { name: `Change the role of ${viewerEmail}` }).click();
    await page.waitForURL(`${base}/dashboard/team`);
    expect(await page.getByLabel(`Role of ${viewerEmail}`, { exact: true }).inputValue()).toBe('developer');
    await viewer.goto(`${base}/dashboard/business`);
    expect(await viewer.locator('.who').textContent()).toContain('(developer)');
    await viewer.context().close();
    await page.context().close();
  }, 120_000);

  it('shows every new page by its labels in sandbox and live, at phone width, without sideways scrolling', async () => {
    const { page, sandbox, live } = await signUp();
    await page.setViewportSize({ width: 375, height: 800 });
    const { customerId, account } = await fundedCustomer(sandbox);
    const transfer = await sandbox.post('/v1/transfers', {
      source: { source_type: 'internal_account', id: account },
      destination: {
        destination_type: 'internal_account',
        id: (await sandbox.post('/v1/accounts', { currency: 'NGN', label: 'Second', customer_id: customerId })).body.data.id,
      },
      amount: '10.00',
    });
    expect(transfer.status, transfer.text).toBe(200);
    const liveCustomer = (await live.post('/v1/customers', johnDoe({ first_name: 'Livia' }))).body.data.id as string;

    const fits = async () => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth + 1');
    // At phone width the sections sit behind the Menu toggle: open it when the link is hidden.
    const goTo = async (name: string) => {
      const link = page.getByRole('link', { name, exact: true });
      if (!(await link.isVisible())) await page.locator('label.nav-toggle-label').click();
      await link.click();
    };
    for (const env of ['Sandbox', 'Live'] as const) {
      await page.goto(`${base}/dashboard/business`);
      await page.getByRole('button', { name: env }).click();
      for (const [link, heading] of [
        ['Overview', /^Overview/],
        ['Events', /^Events/],
        ['Request log', /^Request log/],
        ['Cards', /^Cards/],
        ['Team', /^Team/],
        ['Settings', /^Settings/],
        ['Audit log', /^Audit log/],
        ['Your login', /^Your login/],
      ] as const) {
        await goTo(link);
        expect(await page.getByRole('heading', { level: 1, name: heading }).isVisible(), `${env} ${link}`).toBe(true);
        expect(await fits(), `${env} ${link} fits a phone`).toBe(true);
      }
      await goTo('Customers');
      await page
        .getByRole('link', { name: env === 'Live' ? 'Livia Doe' : 'John Doe' })
        .first()
        .click();
      expect(await page.getByRole('heading', { name: 'KYC documents' }).isVisible()).toBe(true);
      expect(await page.getByRole('heading', { name: 'Features' }).isVisible()).toBe(true);
      expect(await page.locator('main').textContent()).toContain(env === 'Live' ? liveCustomer : customerId);
      expect(await fits(), `${env} customer page fits a phone`).toBe(true);
    }

    await page.getByRole('button', { name: 'Sandbox' }).click();
    await page.goto(`${base}/dashboard/accounts/${account}`);
    expect(await page.getByRole('heading', { name: 'Holds (pending)' }).isVisible()).toBe(true);
    expect(await page.getByRole('columnheader', { name: 'Running balance' }).first().isVisible()).toBe(true);
    expect(await fits()).toBe(true);
    // Keyboard: the skip link leads to the content, and the main navigation is reachable.
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string | undefined>('document.activeElement?.textContent')).toBe('Skip to content');
    await page.locator(`a[href="/dashboard/transfers/${transfer.body.data.id}"]`).first().focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/dashboard\/transfers\/[0-9a-f-]{36}$/);
    expect(await page.getByRole('heading', { name: 'Status timeline' }).isVisible()).toBe(true);
    await page.context().close();
  }, 120_000);
});
