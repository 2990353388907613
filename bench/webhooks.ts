import { randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import pino from 'pino';
import type { DatabaseHandle } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';
import { Sealer } from '../src/lib/crypto.js';
import { createTenant } from '../src/modules/tenants/service.js';
import { webhookJobs, type DeliveryOptions } from '../src/modules/webhooks/delivery.js';
import { recordEvents } from '../src/modules/webhooks/outbox.js';
import { createEndpoint } from '../src/modules/webhooks/service.js';
import { runJobs } from '../src/workers/index.js';

/**
 * Webhook delivery to local receivers, in this process against a PostgreSQL database of its own:
 *  - healthy: 10 businesses with an endpoint each answering 200 at once; a backlog of events
 *    delivered as fast as the pool goes (events/s), then a steady 200 events/s for the
 *    first-attempt latency from commit (p50/p99);
 *  - misbehaving: one endpoint that fails half its deliveries (500) and hangs one in ten past the
 *    15 s timeout, 200 events at 20/s: first-attempt latency, and how late retries start.
 */
export interface WebhookBenchRow {
  name: string;
  measured: string;
  reference: string;
  target: string;
  met?: boolean;
}

type Behaviour = (n: number) => number | 'hang';

async function receiver(behaviour: Behaviour) {
  let n = 0;
  const hanging = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const answer = behaviour(++n);
      if (answer === 'hang') return void hanging.add(res);
      res.writeHead(answer).end();
    });
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const pct = (xs: number[], p: number) =>
  xs.length === 0 ? Number.NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

async function firstAttempts(handle: DatabaseHandle, tenantIds: string[]) {
  const { rows } = await sql<{ latency: number; attempt: number; late: number | null }>`
    select a.attempt, extract(epoch from a.started_at - ev.created_at) * 1000 as latency,
      extract(epoch from a.started_at - a.scheduled_at) * 1000 as late
    from webhook_attempts a join events ev on ev.id = a.event_id
    where a.tenant_id = any(${tenantIds}::uuid[])`.execute(handle.db);
  return rows.map((r) => ({ attempt: r.attempt, latency: Number(r.latency), late: r.late === null ? null : Number(r.late) }));
}

async function businesses(handle: DatabaseHandle, sealer: Sealer, urls: string[]) {
  const out: { tenantId: string }[] = [];
  for (const url of urls) {
    const tenant = await handle.db.transaction().execute((trx) => createTenant(trx, 'Webhook Bench'));
    const ctx = { tenantId: tenant.tenant_id, environment: 'sandbox' as const };
    await createEndpoint(handle.db, ctx, sealer, { url }, { allowLoopback: true });
    out.push({ tenantId: tenant.tenant_id });
  }
  return out;
}

/** Writes `perScope` events for each business at `perSecond` in all (Infinity: at once, in batches). */
async function writeEvents(handle: DatabaseHandle, tenantIds: string[], perScope: number, perSecond: number) {
  const began = Date.now();
  let written = 0;
  const batch = perSecond === Infinity ? 100 : 1;
  for (let i = 0; i < perScope; i += batch) {
    for (const tenantId of tenantIds) {
      const ctx = { tenantId, environment: 'sandbox' as const };
      const list = Array.from({ length: Math.min(batch, perScope - i) }, () => ({
        ctx,
        eventType: 'customer.created' as const,
        data: { id: randomBytes(8).toString('hex') },
      }));
      await handle.db.transaction().execute((trx) => recordEvents(trx, list));
      written += list.length;
      if (perSecond !== Infinity) await sleep(began + (written * 1000) / perSecond - Date.now());
    }
  }
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('webhook bench: deliveries did not finish in time');
    await sleep(100);
  }
}

export async function webhookBench(handle: DatabaseHandle, log: (line: string) => void): Promise<WebhookBenchRow[]> {
  await migrate(handle);
  const sealer = new Sealer(randomBytes(32).toString('base64'));
  const silent = pino({ level: 'silent' });
  const rows: WebhookBenchRow[] = [];
  const start = (options: Partial<DeliveryOptions> = {}) =>
    runJobs(webhookJobs({ db: handle.db, sealer }, { allowLoopback: true, ...options }), silent);

  // Healthy receivers: throughput on a backlog, then latency at a steady rate.
  const healthy = await Promise.all(Array.from({ length: 10 }, () => receiver(() => 200)));
  try {
    const backlog = await businesses(
      handle,
      sealer,
      healthy.map((r) => r.url),
    );
    const ids = backlog.map((b) => b.tenantId);
    await writeEvents(handle, ids, 500, Infinity);
    log('webhooks: delivering a backlog of 5,000 events to 10 healthy receivers');
    const began = Date.now();
    const jobs = start();
    try {
      await waitFor(async () => (await firstAttempts(handle, ids)).length >= 5000, 300_000);
    } finally {
      await jobs.stop();
    }
    const perSecond = 5000 / ((Date.now() - began) / 1000);
    rows.push({
      name: 'webhook events delivered/s (10 healthy local receivers, backlog)',
      measured: `${perSecond.toFixed(0)}/s`,
      reference: '',
      target: '',
    });

    const steady = await businesses(
      handle,
      sealer,
      healthy.map((r) => r.url),
    );
    const steadyIds = steady.map((b) => b.tenantId);
    log('webhooks: 200 events/s for 10 s to 10 healthy receivers');
    const steadyJobs = start();
    try {
      await writeEvents(handle, steadyIds, 200, 200);
      await waitFor(async () => (await firstAttempts(handle, steadyIds)).length >= 2000, 120_000);
    } finally {
      await steadyJobs.stop();
    }
    const latency = (await firstAttempts(handle, steadyIds)).map((a) => a.latency);
    rows.push({
      name: 'webhook first attempt after commit (healthy, 200 events/s)',
      measured: `p50 ${pct(latency, 50).toFixed(0)} ms, p99 ${pct(latency, 99).toFixed(0)} ms`,
      reference: '',
      target: 'p50 ≤ 2 s',
      met: pct(latency, 50) <= 2000,
    });
  } finally {
    for (const r of healthy) await r.close();
  }

  // The misbehaving receiver: fails half, hangs one in ten past the (production) 15 s timeout.
  const bad = await receiver((n) => (n % 10 === 1 ? 'hang' : n % 2 === 0 ? 500 : 200));
  try {
    const [biz] = await businesses(handle, sealer, [bad.url]);
    log('webhooks: 200 events at 20/s to a receiver that fails half and hangs one in ten (15 s timeout)');
    const jobs = start();
    try {
      await writeEvents(handle, [biz!.tenantId], 200, 20);
      await waitFor(async () => {
        const all = await firstAttempts(handle, [biz!.tenantId]);
        return all.filter((a) => a.attempt === 1).length >= 200 && all.filter((a) => a.attempt === 2).length >= 110;
      }, 120_000);
    } finally {
      await jobs.stop();
    }
    const all = await firstAttempts(handle, [biz!.tenantId]);
    const first = all.filter((a) => a.attempt === 1).map((a) => a.latency);
    const late = all.filter((a) => a.attempt === 2 && a.late !== null).map((a) => a.late!);
    rows.push({
      name: 'webhook first attempt after commit (misbehaving receiver)',
      measured: `p50 ${pct(first, 50).toFixed(0)} ms, p99 ${pct(first, 99).toFixed(0)} ms, max ${Math.max(...first).toFixed(0)} ms`,
      reference: '',
      target: 'max < 15 s, p50 ≤ 2 s',
      met: Math.max(...first) < 15_000 && pct(first, 50) <= 2000,
    });
    rows.push({
      name: 'webhook first retry start after its scheduled time (misbehaving receiver)',
      measured: `p50 ${pct(late, 50).toFixed(0)} ms, max ${Math.max(...late).toFixed(0)} ms (${late.length} retries)`,
      reference: '',
      target: '≤ 10 % of 5 s or 1 s',
      met: Math.max(...late) <= 1000,
    });
  } finally {
    await bad.close();
  }
  return rows;
}
