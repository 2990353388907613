import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import { mustChoose } from './errors.js';
import { formatAmount } from '../lib/money.js';
import { daysEnding, fillDays, svgChart } from './chart.js';
import { html, type Html } from './html.js';
import { appPage, badge, idLink, table, when } from './layout.js';
import { readOverview, type Checklist, type CurrencyBalance, type RecentEvent, type RecentTransfer } from './overview-repo.js';
import { sendPage, sessionOf } from './replies.js';
import type { Session } from './service.js';

/** The time ranges the charts offer, in days; the first page shows the default. */
export const RANGES = [7, 30, 90] as const;
const DEFAULT_RANGE = 30;
const RECENT = 10;

/** `?range=` as one of RANGES; absent is the default, anything else is refused (400). */
export function parseRange(value: unknown): number {
  if (value === undefined || value === '') return DEFAULT_RANGE;
  const n = typeof value === 'string' && /^\d{1,3}$/.test(value) ? Number(value) : NaN;
  if (!(RANGES as readonly number[]).includes(n)) {
    throw mustChoose(`a range of ${RANGES.join(', ')} days`);
  }
  return n;
}

/** The page the dashboard opens on: balances, checklist, charts over a range, recent activity. */
export function overviewRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    overviewPages(app, deps);
  };
}

function overviewPages(app: FastifyInstance, deps: Deps) {
  app.get('/overview', async (request, reply) => {
    const session = sessionOf(request);
    const range = parseRange((request.query as Record<string, unknown> | undefined)?.range);
    const days = daysEnding(new Date(), range);
    const data = await loadOverview(deps, session, new Date(`${days[0]}T00:00:00Z`));
    const { balances, steps, transfers, events } = data;
    return sendPage(reply, overviewPage(session, { range, balances, steps, transfers, events, charts: chartsOf(days, range, data) }));
  });
}

/** Everything the page shows, read in one snapshot: the recent rows and the per-day series since `since`. */
function loadOverview(deps: Deps, session: Session, since: Date) {
  const scope = { tenantId: session.tenantId, environment: session.environment };
  return deps.inSnapshot((trx) => readOverview(trx, scope, since, RECENT));
}

type OverviewData = Awaited<ReturnType<typeof loadOverview>>;

function chartsOf(days: string[], range: number, data: OverviewData): Html {
  const requests = new Map(data.requestDays.map((d) => [d.day, d]));
  const deliveries = new Map(data.deliveryDays.map((d) => [d.day, d]));
  return html`${transferCharts(days, range, data.transferDays)}
${requestsChart(days, range, requests)}
${errorRateChart(days, range, requests)}
${deliveryChart(days, range, deliveries)}`;
}

/** The count of transfers per day, then one volume chart per currency (amounts never add across currencies). */
function transferCharts(days: string[], range: number, transferDays: OverviewData['transferDays']): Html {
  const counts = new Map<string, number>();
  const volumes = new Map<string, Map<string, bigint>>();
  for (const d of transferDays) {
    counts.set(d.day, (counts.get(d.day) ?? 0) + d.count);
    const byDay = volumes.get(d.currency) ?? new Map<string, bigint>();
    byDay.set(d.day, d.volume);
    volumes.set(d.currency, byDay);
  }
  return html`${chartCard(
    'Transfers per day',
    svgChart(
      fillDays(days, counts, (n) => n ?? 0),
      { title: `Transfers created per day, last ${range} days`, kind: 'bar' },
    ),
  )}
${[...volumes].sort(([a], [b]) => a.localeCompare(b)).map(([currency, byDay]) => volumeChart(days, range, currency, byDay))}`;
}

function volumeChart(days: string[], range: number, currency: string, byDay: Map<string, bigint>): Html {
  return chartCard(
    `Transfer volume (${currency})`,
    svgChart(
      // Bar heights only: the amounts themselves are shown as the decimal strings of formatAmount.
      days.map((label) => {
        const amount = formatAmount(byDay.get(label) ?? 0n, currency);
        return { label, value: Number(amount), text: `${amount} ${currency}` };
      }),
      { title: `Transfer volume in ${currency} per day, last ${range} days`, kind: 'bar' },
    ),
  );
}

type RequestDays = Map<string, OverviewData['requestDays'][number]>;

function requestsChart(days: string[], range: number, requests: RequestDays): Html {
  return chartCard(
    'API requests per day',
    svgChart(
      fillDays(days, requests, (d) => d?.total ?? 0),
      { title: `API requests per day, last ${range} days`, kind: 'bar' },
    ),
  );
}

function errorRateChart(days: string[], range: number, requests: RequestDays): Html {
  return chartCard(
    'API error rate (4xx and 5xx)',
    svgChart(
      days.map((label) => {
        const d = requests.get(label);
        return d?.total ? { label, value: percent(d.errors, d.total) } : { label, value: 0, text: 'no requests' };
      }),
      { title: `Share of API requests answered with an error per day, last ${range} days`, kind: 'line', unit: ' %', max: 100 },
    ),
  );
}

function deliveryChart(days: string[], range: number, deliveries: Map<string, OverviewData['deliveryDays'][number]>): Html {
  return chartCard(
    'Webhook delivery success',
    svgChart(
      days.map((label) => {
        const d = deliveries.get(label);
        const finished = (d?.sent ?? 0) + (d?.failed ?? 0);
        return finished ? { label, value: percent(d!.sent, finished) } : { label, value: 0, text: 'no finished deliveries' };
      }),
      { title: `Share of finished webhook deliveries that succeeded per day, last ${range} days`, kind: 'line', unit: ' %', max: 100 },
    ),
  );
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((part / whole) * 1000) / 10;
}

function chartCard(title: string, chart: Html): Html {
  return html`<figure class="card chart-card"><figcaption>${title}</figcaption>${chart}</figure>`;
}

const STEPS: [keyof Checklist, string, string, string][] = [
  ['request', 'Make your first API request', '/dashboard/keys', 'Copy a secret key and call the API'],
  ['customer', 'Create your first customer', '/dashboard/customers', 'POST /v1/customers'],
  ['webhook', 'Register a webhook endpoint', '/dashboard/webhooks', 'Add an endpoint'],
  ['delivered', 'Receive your first event', '/dashboard/webhooks', 'See deliveries'],
  ['liveKeyUsed', 'Use your live key', '/dashboard/keys', 'Switch to live and copy its key'],
];

function checklistCard(steps: Checklist): Html {
  const done = STEPS.filter(([k]) => steps[k]).length;
  return html`<section class="card" aria-labelledby="checklist-title">
  <h2 id="checklist-title">Getting started <small>(${done} of ${STEPS.length} done)</small></h2>
  <ol class="checklist">${STEPS.map(
    ([key, label, href, next]) =>
      html`<li class="${steps[key] ? 'step-done' : 'step-todo'}" data-step="${key}" data-done="${steps[key] ? 'true' : 'false'}">
    <span class="step-mark" aria-hidden="true">${steps[key] ? '✓' : '○'}</span>
    <span class="sr-only">${steps[key] ? 'Done:' : 'To do:'}</span> ${label}${steps[key] ? '' : html` · <a href="${href}">${next}</a>`}
  </li>`,
  )}</ol>
</section>`;
}

function balancesCard(balances: CurrencyBalance[]): Html {
  return html`<section class="card" aria-labelledby="balances-title">
  <h2 id="balances-title">Balances</h2>
  ${table(
    'Balances per currency',
    [
      { label: 'Currency', cell: (b: CurrencyBalance) => b.currency },
      {
        label: 'Balance',
        cell: (b) => html`<span data-balance="${b.currency}">${formatAmount(b.posted, b.currency)}</span>`,
        numeric: true,
      },
      { label: 'Available', cell: (b) => formatAmount(b.available, b.currency), numeric: true },
      { label: 'Accounts', cell: (b) => b.accounts, numeric: true },
    ],
    balances,
    'No accounts yet: open one with POST /v1/accounts.',
  )}
  <p><a href="/dashboard/accounts">All accounts</a></p>
</section>`;
}

interface OverviewView {
  range: number;
  balances: CurrencyBalance[];
  steps: Checklist;
  transfers: RecentTransfer[];
  events: RecentEvent[];
  charts: Html;
}

function rangeSelector(range: number): Html {
  return html`<nav class="range-selector" aria-label="Time range">${RANGES.map(
    (r) => html`<a href="/dashboard/overview?range=${r}"${r === range ? html` aria-current="true"` : ''}>${r} days</a>`,
  )}</nav>`;
}

export function overviewPage(session: Session, view: OverviewView): Html {
  const iso = (d: Date) => new Date(d).toISOString();
  return appPage(
    session,
    'overview',
    `Overview · ${session.environment}`,
    html`<div class="overview-top">
${checklistCard(view.steps)}
${balancesCard(view.balances)}
</div>
<section aria-labelledby="activity-title">
  <h2 id="activity-title">Activity over the last ${view.range} days</h2>
  ${rangeSelector(view.range)}
  <div class="chart-grid">${view.charts}</div>
</section>
<section class="card" aria-labelledby="recent-transfers-title">
  <h2 id="recent-transfers-title">Recent transfers</h2>
  ${table(
    'The last transfers, newest first',
    [
      { label: 'Transfer', cell: (t) => idLink('transfer', t.id, t.id) },
      { label: 'Amount', cell: (t) => `${formatAmount(t.amount, t.currency)} ${t.currency}`, numeric: true },
      { label: 'Status', cell: (t) => badge(t.status) },
      { label: 'Created', cell: (t) => when(iso(t.created_at)) },
    ],
    view.transfers,
    'No transfers yet: fund an account and POST /v1/transfers.',
  )}
  <p><a href="/dashboard/transfers">All transfers</a></p>
</section>
<section class="card" aria-labelledby="recent-events-title">
  <h2 id="recent-events-title">Recent events</h2>
  ${table(
    'The last events, newest first',
    [
      { label: 'Event', cell: (e) => idLink('event', e.id, e.event_type) },
      { label: 'Created', cell: (e) => when(iso(e.created_at)) },
    ],
    view.events,
    'No events yet: they appear when customers, accounts and transfers change.',
  )}
  <p><a href="/dashboard/events">All events</a></p>
</section>`,
  );
}
