import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import type { Config } from '../src/config.js';
import { startWorkers } from '../src/workers/index.js';
import { startTestApp, type TestApp } from './harness.js';
import { startReceiver, type Receiver } from './webhooks/receiver.js';

/**
 * What the browser tests stand on: the app listening on 127.0.0.1 with fast webhook workers, a
 * local webhook receiver, and Debian's Chromium (/usr/bin/chromium, never a downloaded browser).
 * Where Chromium is missing the tests are skipped with a message.
 */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`dashboard browser tests skipped: ${CHROMIUM} is missing (apt-get install -y chromium)`);

export interface BrowserStand {
  t: TestApp;
  base: string;
  receiver: Receiver;
  browser: Browser;
  close(): Promise<void>;
}

export async function startBrowserStand(overrides: Partial<Config> = {}): Promise<BrowserStand> {
  const t = await startTestApp(overrides);
  const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  const receiver = await startReceiver();
  const workers = startWorkers(
    { config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log },
    { webhooks: { retryDelaysMs: [200], jitter: 0, timeoutMs: 2000 } },
  );
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    t,
    base,
    receiver,
    browser,
    async close() {
      await workers.stop();
      await receiver.close();
      await browser.close();
      await t.close();
    },
  };
}
