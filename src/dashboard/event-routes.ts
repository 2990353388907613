import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../http/deps.js';
import { AppError, notFound } from '../core/errors.js';
import { statusOf } from '../http/errors.js';
import { PageQuery, type Page } from '../db/pagination.js';
import { isUuid } from '../lib/ids.js';
import { EVENT_TYPES } from '../modules/webhooks/service.js';
import type { AttemptResponse, DeliverySummary } from '../modules/webhooks/schema.js';
import * as webhooks from '../modules/webhooks/service.js';
import { emptyState } from './empty-states.js';
import { html, type Html } from './html.js';
import {
  alert,
  appPage,
  badge,
  copyButton,
  csrfField,
  filterForm,
  idCell,
  idLink,
  pager,
  table,
  when,
  type DetailKind,
  type FilterField,
} from './layout.js';
import { can } from './roles.js';
import { queryValues } from './list-view.js';
import { sendPage, sessionOf } from './replies.js';
import type { Session } from './service.js';

const TYPES = [...EVENT_TYPES, webhooks.TEST_EVENT_TYPE];
const EventsQuery = PageQuery.extend({
  event_type: z.enum(TYPES).optional(),
  group_id: z.string().trim().min(1).max(255).optional(),
});
const FIELDS: FilterField[] = [
  { name: 'event_type', label: 'Event type', type: 'select', options: TYPES },
  { name: 'group_id', label: 'Resource id' },
  { name: 'from', label: 'From', type: 'date' },
  { name: 'to', label: 'To', type: 'date' },
];

/** The page of the resource an event is about, from its type. */
export function resourceLink(eventType: string, id: string): Html | null {
  const kind: DetailKind | null = eventType.startsWith('transfer.')
    ? 'transfer'
    : eventType.startsWith('customer.')
      ? 'customer'
      : eventType.startsWith('account.')
        ? 'account'
        : eventType.startsWith('cards.status')
          ? 'card'
          : null;
  return kind ? idLink(kind, id) : idCell(id);
}

export function eventTable(caption: string, events: webhooks.EventSummary[], empty: string | Html): Html {
  return table(
    caption,
    [
      { label: 'Event', cell: (e: webhooks.EventSummary) => html`<a href="/dashboard/events/${e.id}">${e.event_type}</a>` },
      { label: 'Resource', cell: (e) => resourceLink(e.event_type, e.event_group_id) },
      { label: 'Time', cell: (e) => when(e.created_at) },
    ],
    events,
    empty,
  );
}

/** Without filters an empty list means no event yet: say what makes one. */
function noneMatch(filters: Record<string, string | undefined>): string | Html {
  return Object.keys(filters).some((k) => k !== 'page') ? 'No events match.' : emptyState('events', '');
}

function listPage(
  session: Session,
  filters: Record<string, string | undefined>,
  page: Page<webhooks.EventSummary> | null,
  error?: string,
): Html {
  return appPage(
    session,
    'events',
    `Events · ${session.environment}`,
    html`${filterForm('/dashboard/events', FIELDS, filters)}
${error ? alert('error', error) : ''}
${page ? html`${eventTable('Events', page.items, noneMatch(filters))}${pager('/dashboard/events', (({ page: _p, ...f }) => f)(filters), page as Page<unknown>)}` : ''}`,
  );
}

function excerpt(a: AttemptResponse): string | null {
  if (!a.response_body) return null;
  const text =
    'text' in a.response_body && Object.keys(a.response_body).length === 1 ? String(a.response_body.text) : JSON.stringify(a.response_body);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function deliverySection(session: Session, eventId: string, d: DeliverySummary, attempts: AttemptResponse[]): Html {
  const rows = table(
    `Attempts to ${d.path}`,
    [
      { label: '#', cell: (a: AttemptResponse) => a.attempt, numeric: true },
      { label: 'Trigger', cell: (a) => a.trigger },
      { label: 'Status code', cell: (a) => a.status_code },
      { label: 'Latency (ms)', cell: (a) => a.duration_ms, numeric: true },
      { label: 'Response', cell: (a) => (excerpt(a) ? html`<code>${excerpt(a)}</code>` : null) },
      { label: 'Error', cell: (a) => a.error },
      { label: 'At', cell: (a) => when(a.created_at) },
    ],
    attempts,
    'No attempt yet.',
  );
  const resend = can(session.role, 'webhooks')
    ? html`<form method="post" action="/dashboard/webhooks/deliveries/${d.id}/resend">${csrfField(session)}
    <input type="hidden" name="back" value="/dashboard/events/${eventId}">
    <button type="submit" aria-label="Resend to ${d.path}">Resend</button></form>`
    : '';
  return html`<section class="card delivery" aria-label="Delivery to ${d.path}">
  <h3>To <code>${d.path}</code> ${badge(d.status)}</h3>
  <p>${d.attempts} attempt(s)${d.next_attempt ? html`, next at ${when(d.next_attempt)}` : ''}. <a href="/dashboard/webhooks/deliveries/${d.id}">Delivery details</a></p>
  ${resend}
  ${rows}
</section>`;
}

async function detailPage(deps: Deps, session: Session, id: string): Promise<Html> {
  const scope = { tenantId: session.tenantId, environment: session.environment };
  const event = await webhooks.getEvent(deps.db, scope, id);
  const sections = await Promise.all(
    event.deliveries.map(async (d) =>
      deliverySection(session, id, d, (await webhooks.listAttempts(deps.db, scope, d.id, { page: 1, items_per_page: 20 })).items),
    ),
  );
  return appPage(
    session,
    'events',
    `Event ${event.event_type}`,
    html`<section class="card">
  <dl class="facts">
    <dt>Event id</dt><dd><code id="event-id">${event.id}</code> ${copyButton(event.id, 'event id')}</dd>
    <dt>Resource</dt><dd>${resourceLink(event.event_type, event.event_group_id)}</dd>
    <dt>Time</dt><dd>${when(event.created_at)}</dd>
  </dl>
</section>
<section class="card" aria-labelledby="payload-title"><h2 id="payload-title">Payload</h2>
<pre class="payload" tabindex="0" aria-labelledby="payload-title">${JSON.stringify(event.payload, null, 2)}</pre></section>
<section aria-labelledby="deliveries-title"><h2 id="deliveries-title">Deliveries</h2>
${sections.length > 0 ? sections : html`<p class="empty">No webhook endpoint received this event (none was enabled for its type when it happened).</p>`}
</section>
<p><a href="/dashboard/events">Back to events</a></p>`,
  );
}

function filtersOf(request: FastifyRequest): Record<string, string | undefined> {
  return queryValues(request, [...FIELDS.map((f) => f.name), 'page']);
}

/** Every event of the environment, and per event its payload and each endpoint's attempts. */
export function eventRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/events', async (request, reply) => {
      const session = sessionOf(request);
      const filters = filtersOf(request);
      const parsed = EventsQuery.safeParse({ ...filters, items_per_page: '20' });
      if (!parsed.success) {
        return sendPage(
          reply,
          listPage(
            session,
            filters,
            null,
            `Invalid filter. ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
          ),
        );
      }
      try {
        const page = await webhooks.listEvents(deps.db, { tenantId: session.tenantId, environment: session.environment }, parsed.data);
        return sendPage(reply, listPage(session, filters, page));
      } catch (err) {
        if (!(err instanceof AppError) || statusOf(err) !== 400) throw err;
        return sendPage(reply, listPage(session, filters, null, err.message));
      }
    });

    app.get('/events/:id', async (request, reply) => {
      const id = (request.params as { id: string }).id;
      if (!isUuid(id)) throw notFound('Event');
      return sendPage(reply, await detailPage(deps, sessionOf(request), id));
    });
  };
}
