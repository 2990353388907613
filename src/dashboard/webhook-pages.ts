import type { Page } from '../db/pagination.js';
import { EVENT_TYPES } from '../modules/webhooks/service.js';
import {
  DELIVERY_STATUSES,
  type AttemptResponse,
  type DeliveryDetail,
  type DeliverySummary,
  type EndpointResponse,
} from '../modules/webhooks/schema.js';
import { emptyState } from './empty-states.js';
import { html, type Html } from './html.js';
import { appPage, badge, copyable, csrfField, filterForm, idLink, pager, table, when } from './layout.js';
import { can } from './roles.js';
import type { Flash, Session } from './service.js';

const OVERLAP_CHOICES = [
  [0, 'Now'],
  [3600, 'In 1 hour'],
  [86_400, 'In 24 hours'],
  [604_800, 'In 7 days'],
] as const;

/** Checkboxes of the closed event-type list; none ticked means every event. */
export function eventTypeFields(selected: readonly string[], idPrefix: string): Html {
  return html`<fieldset>
  <legend>Event types (none ticked: all events)</legend>
  <div class="checks">${EVENT_TYPES.map(
    (
      type,
    ) => html`<div><input type="checkbox" id="${idPrefix}-${type}" name="event_types" value="${type}"${selected.includes(type) ? html` checked` : ''}>
    <label for="${idPrefix}-${type}">${type}</label></div>`,
  )}</div>
</fieldset>`;
}

function endpointActions(session: Session, e: EndpointResponse): Html | string {
  if (!can(session.role, 'webhooks')) return '';
  const next = e.status === 'enabled' ? 'disabled' : 'enabled';
  return html`<a href="/dashboard/webhooks/endpoints/${e.id}">Edit</a>
  <form method="post" action="/dashboard/webhooks/endpoints/${e.id}/test">${csrfField(session)}
    <button type="submit" aria-label="Send test event to ${e.url}">Send test event</button></form>
  <form method="post" action="/dashboard/webhooks/endpoints/${e.id}/status">${csrfField(session)}
    <input type="hidden" name="status" value="${next}"><button type="submit">${next === 'enabled' ? 'Enable' : 'Disable'}</button></form>
  <form method="post" action="/dashboard/webhooks/endpoints/${e.id}/rotate" class="inline">${csrfField(session)}
    <label for="overlap-${e.id}" class="sr-only">Old secret stops signing</label>
    <select id="overlap-${e.id}" name="expire_old_in_seconds">${OVERLAP_CHOICES.map(
      ([s, label]) => html`<option value="${s}"${s === 86_400 ? html` selected` : ''}>Old secret ends: ${label}</option>`,
    )}</select>
    <button type="submit">Rotate secret</button></form>`;
}

function oneTimeSecret(flash: Extract<Flash, { kind: 'webhook_secret' }>): Html {
  return html`<section class="card one-time" aria-labelledby="secret-title">
  <h2 id="secret-title">Copy the signing secret now</h2>
  <p>This is the only time the secret of endpoint <code>${flash.endpoint_id}</code> is shown. Use it to verify the
  <code>webhook-signature</code> header (Standard Webhooks).</p>
  ${copyable('webhook-secret', 'Signing secret', flash.secret)}
</section>`;
}

export interface WebhooksView {
  endpoints: EndpointResponse[];
  deliveries: Page<DeliverySummary> | null;
  filters: Record<string, string | undefined>;
  flash: Flash | null;
  notice?: Html;
  form?: { url: string; event_types: string[] };
}

function addForm(session: Session, view: WebhooksView): Html {
  return html`<section class="card">
  <h2>Add an endpoint</h2>
  <form method="post" action="/dashboard/webhooks">
    ${csrfField(session)}
    <div class="field"><label for="wh-url">Endpoint URL</label>
      <input id="wh-url" name="url" type="url" required placeholder="https://example.com/webhooks" value="${view.form?.url ?? ''}"></div>
    ${eventTypeFields(view.form?.event_types ?? [], 'new')}
    <button type="submit" class="primary">Generate</button>
  </form>
</section>`;
}

function deliveriesTable(session: Session, view: WebhooksView, deliveries: Page<DeliverySummary>): Html {
  const urls = new Map(view.endpoints.map((e) => [e.id, e.url]));
  const filtered = Object.keys(view.filters).some((k) => k !== 'page' && view.filters[k]);
  return html`${table(
    'Webhook deliveries',
    [
      { label: 'Event', cell: (d: DeliverySummary) => html`<a href="/dashboard/webhooks/deliveries/${d.id}">${d.event_type}</a>` },
      { label: 'Event id', cell: (d) => idLink('event', d.event_id) },
      { label: 'Endpoint', cell: (d) => urls.get(d.endpoint_id) ?? d.path },
      { label: 'Status', cell: (d) => badge(d.status) },
      { label: 'Attempts', cell: (d) => d.attempts, numeric: true },
      { label: 'Last response', cell: (d) => d.response_status_code },
      { label: 'Last attempt', cell: (d) => when(d.last_attempt) },
      { label: 'Next attempt', cell: (d) => when(d.next_attempt) },
      {
        label: 'Resend',
        cell: (d) =>
          !can(session.role, 'webhooks')
            ? null
            : html`<form method="post" action="/dashboard/webhooks/deliveries/${d.id}/resend">${csrfField(session)}
              <button type="submit" aria-label="Resend ${d.event_type} event">Resend</button></form>`,
      },
    ],
    deliveries.items,
    filtered ? 'No deliveries match.' : 'No deliveries yet: each event sent to an endpoint shows up here with its attempts.',
  )}${pager('/dashboard/webhooks', view.filters, deliveries as Page<unknown>)}`;
}

export function webhooksPage(session: Session, view: WebhooksView): Html {
  const endpoints = table(
    'Webhook endpoints',
    [
      { label: 'URL', cell: (e: EndpointResponse) => html`<code>${e.url}</code>` },
      { label: 'Status', cell: (e) => html`${badge(e.status)}${e.disabled_reason ? html` <small>${e.disabled_reason}</small>` : ''}` },
      { label: 'Events', cell: (e) => (e.event_types.length === 0 ? 'All events' : e.event_types.join(', ')) },
      { label: 'Actions', cell: (e) => endpointActions(session, e) },
    ],
    view.endpoints,
    emptyState('webhooks', ''),
  );
  const deliveries = view.deliveries ? deliveriesTable(session, view, view.deliveries) : '';
  return appPage(
    session,
    'webhooks',
    `Webhooks · ${session.environment}`,
    html`${view.flash?.kind === 'webhook_secret' ? oneTimeSecret(view.flash) : ''}
${can(session.role, 'webhooks') ? addForm(session, view) : ''}
<section class="card"><h2>Endpoints</h2>${endpoints}</section>
<section class="card"><h2>Deliveries</h2>
${filterForm(
  '/dashboard/webhooks',
  [
    { name: 'status', label: 'Status', type: 'select', options: DELIVERY_STATUSES },
    { name: 'event_type', label: 'Event type', type: 'select', options: EVENT_TYPES },
    { name: 'from', label: 'From', type: 'date' },
    { name: 'to', label: 'To', type: 'date' },
  ],
  view.filters,
)}
${deliveries}
</section>`,
    view.notice,
  );
}

export function endpointPage(session: Session, e: EndpointResponse, notice?: Html): Html {
  return appPage(
    session,
    'webhooks',
    'Edit webhook endpoint',
    html`<section class="card">
  <form method="post" action="/dashboard/webhooks/endpoints/${e.id}">
    ${csrfField(session)}
    <div class="field"><label for="wh-url">Endpoint URL</label>
      <input id="wh-url" name="url" type="url" required value="${e.url}"></div>
    ${eventTypeFields(e.event_types, 'edit')}
    <button type="submit" class="primary">Save</button>
  </form>
</section>
<section class="card">
  <h2>Delivery</h2>
  <p>Circuit: <strong id="wh-circuit">${e.circuit}</strong>${
    e.circuit === 'open' && e.circuit_open_until
      ? html` until ${e.circuit_open_until} (events wait and are sent when it closes)`
      : e.circuit === 'probing'
        ? ' (one delivery at a time until one succeeds)'
        : ''
  }; ${e.consecutive_failures} failed attempt(s) in a row.</p>
  <form method="post" action="/dashboard/webhooks/endpoints/${e.id}/replay">
    ${csrfField(session)}
    <div class="field"><label for="wh-replay-from">Replay events from (UTC)</label>
      <input id="wh-replay-from" name="from" type="datetime-local" required></div>
    <div class="field"><label for="wh-replay-to">to (UTC, empty: now)</label>
      <input id="wh-replay-to" name="to" type="datetime-local"></div>
    <div class="field"><label for="wh-replay-scope">Which</label>
      <select id="wh-replay-scope" name="scope"><option value="failed">Failed deliveries</option><option value="all">All events</option></select></div>
    <button type="submit">Replay</button>
  </form>
</section>
<section class="card">
  <h2>Delete</h2>
  <form method="post" action="/dashboard/webhooks/endpoints/${e.id}/delete" data-confirm="Delete this endpoint? Nothing more will be sent to it.">
    ${csrfField(session)}<button type="submit" class="danger">Delete endpoint</button>
  </form>
</section>
<p><a href="/dashboard/webhooks">Back to webhooks</a></p>`,
    notice,
  );
}

/** One delivery: its payload and every attempt (status, duration, error), newest first. */
export function deliveryPage(session: Session, d: DeliveryDetail, attempts: Page<AttemptResponse>): Html {
  const rows = table(
    'Attempts',
    [
      { label: '#', cell: (a: AttemptResponse) => a.attempt, numeric: true },
      { label: 'Trigger', cell: (a) => a.trigger },
      { label: 'Status code', cell: (a) => a.status_code },
      { label: 'Duration (ms)', cell: (a) => a.duration_ms, numeric: true },
      { label: 'Error', cell: (a) => a.error },
      { label: 'At', cell: (a) => when(a.created_at) },
    ],
    attempts.items,
    'No attempt yet.',
  );
  return appPage(
    session,
    'webhooks',
    `Delivery of ${d.event_type}`,
    html`<section class="card">
  <dl class="facts">
    <dt>Status</dt><dd>${badge(d.status)}</dd>
    <dt>Endpoint</dt><dd><code>${d.path}</code></dd>
    <dt>Attempts</dt><dd>${d.attempts} of at most ${d.max_retries + 1}</dd>
    <dt>Next attempt</dt><dd>${d.next_attempt ?? '—'}</dd>
    <dt>Event id</dt><dd><code>${d.event_id}</code></dd>
  </dl>
  <form method="post" action="/dashboard/webhooks/deliveries/${d.id}/resend">${csrfField(session)}<button type="submit">Resend</button></form>
</section>
<section class="card"><h2>Attempts</h2>${rows}${pager(`/dashboard/webhooks/deliveries/${d.id}`, {}, attempts as Page<unknown>)}</section>
<section class="card"><h2>Payload</h2><pre class="payload">${JSON.stringify(d.payload, null, 2)}</pre></section>
<p><a href="/dashboard/webhooks">Back to webhooks</a></p>`,
  );
}
