import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../http/deps.js';
import { AppError, notFound } from '../core/errors.js';
import { statusOf } from '../http/errors.js';
import { PageQuery, type Page } from '../db/pagination.js';
import { isUuid } from '../lib/ids.js';
import {
  getRequest,
  listRequests,
  type AnswerEvent,
  type RequestLogDetail,
  type RequestLogSummary,
} from '../modules/request-log/service.js';
import { TransferResponse } from '../modules/transfers/schema.js';
import { envelope } from '../http/envelope.js';
import { answerWriter } from '../http/serializer.js';
import { eventsOf, type EventSummary } from '../modules/webhooks/service.js';
import { html, queryString, type Html } from './html.js';
import { emptyState } from './empty-states.js';
import {
  alert,
  appPage,
  badge,
  copyButton,
  detailPath,
  facts,
  filterForm,
  idCell,
  prettyJson,
  shortValue,
  table,
  when,
  type FilterField,
} from './layout.js';
import { queryValues } from './list-view.js';
import { originOf, sendPage, sessionOf } from './replies.js';
import type { Session } from './service.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
const STATUS_CLASSES = ['2xx', '3xx', '4xx', '5xx'] as const;

/** The request log's filters, validated like an API list's. */
export const RequestLogQuery = PageQuery.extend({
  status: z.enum(STATUS_CLASSES).optional(),
  method: z.enum(METHODS).optional(),
  path: z.string().trim().startsWith('/', 'Start the path with /').max(2048).optional(),
  request_id: z.string().trim().min(1).max(128).optional(),
});

const FIELDS: FilterField[] = [
  { name: 'request_id', label: 'Request id' },
  { name: 'status', label: 'Status', type: 'select', options: STATUS_CLASSES },
  { name: 'method', label: 'Method', type: 'select', options: METHODS },
  { name: 'path', label: 'Path starts with' },
  { name: 'from', label: 'From', type: 'date' },
  { name: 'to', label: 'To', type: 'date' },
];

function statusBadge(status: number): Html {
  const kind = status >= 500 ? 'failed' : status >= 400 ? 'pending' : 'completed';
  return html`<span class="badge badge-${kind}">${status}</span>`;
}

function filtersOf(request: FastifyRequest): Record<string, string | undefined> {
  return queryValues(request, [...FIELDS.map((f) => f.name), 'cursor']);
}

function keysetPager(filters: Record<string, string | undefined>, page: Page<unknown>): Html {
  const { cursor, ...rest } = filters;
  return html`<nav class="pager" aria-label="Pages">
  ${cursor ? html`<a href="/dashboard/requests${queryString(rest)}">Newest</a>` : ''}
  <span>${page.total_items !== null ? `${page.total_items} requests match` : 'More than 10,000 requests match'}</span>
  ${page.next_cursor ? html`<a href="/dashboard/requests${queryString({ ...rest, cursor: page.next_cursor })}" rel="next">Older →</a>` : ''}
</nav>`;
}

function listPage(
  session: Session,
  origin: string,
  filters: Record<string, string | undefined>,
  page: Page<RequestLogSummary> | null,
  error?: string,
): Html {
  const rows = page
    ? table(
        'API requests',
        [
          { label: 'Time', cell: (r: RequestLogSummary) => when(r.created_at) },
          { label: 'Method', cell: (r) => r.method },
          {
            label: 'Path',
            cell: (r) => html`<a href="/dashboard/requests/${r.id}"><code>${r.path}${r.query ? `?${r.query}` : ''}</code></a>`,
          },
          { label: 'Status', cell: (r) => statusBadge(r.status) },
          { label: 'Duration (ms)', cell: (r) => r.duration_ms, numeric: true },
          { label: 'Request id', cell: (r) => shortValue(r.request_id, 'request id', detailPath('request', r.id)) },
          {
            label: 'Idempotency-Key',
            cell: (r) =>
              r.idempotency_key
                ? html`${shortValue(r.idempotency_key, 'Idempotency-Key')}${r.idempotency_replayed ? html` ${badge('replayed')}` : ''}`
                : null,
          },
          // The key is stored masked (`sk_sandbox_…abcd`): shown whole, nothing worth copying.
          { label: 'Key', cell: (r) => (r.key_prefix ? html`<code class="id">${r.key_prefix}</code>` : null) },
        ],
        page.items,
        Object.keys(filters).length === 0 ? emptyState('requests', origin) : 'No API requests match.',
      )
    : '';
  return appPage(
    session,
    'requests',
    `Request log · ${session.environment}`,
    html`<p>Every <code>/v1</code> request made with this environment's keys, newest first. Error answers carry a
  <code>request_id</code>: paste it below to find the request. Secrets and card data are never stored.</p>
${filterForm('/dashboard/requests', FIELDS, filters)}
${error ? alert('error', error) : ''}
<div class="requests-table">${rows}</div>
${page ? keysetPager(filters, page as Page<unknown>) : ''}`,
  );
}

const writeTransferAnswer = answerWriter(envelope(TransferResponse));

/**
 * The answer of a logged request that points at its event (a transfer's: migration 1264), written
 * as POST /v1/transfers wrote it: by the route's response schema, in its key order.
 */
export function answerOfEvent(event: AnswerEvent): string | null {
  return event.type.startsWith('transfer.') ? writeTransferAnswer({ data: event.data, error: null }) : null;
}

function body(title: string, id: string, text: string | null): Html {
  return html`<section class="card" aria-labelledby="${id}"><h2 id="${id}">${title}</h2>
  ${text === null ? html`<p class="empty">No body.</p>` : html`<pre class="payload" tabindex="0" aria-labelledby="${id}">${prettyJson(text)}</pre>`}</section>`;
}

/** Ids the request names (its path, and the `data.id` of its answer): whose events to show. */
export function resourceIdsOf(r: RequestLogDetail): string[] {
  const ids = r.path.split('/').filter(isUuid);
  try {
    const data = (JSON.parse(r.response_body ?? 'null') as { data?: { id?: unknown } } | null)?.data;
    if (data && typeof data.id === 'string') ids.push(data.id);
  } catch {
    // a cut or non-JSON body names nothing
  }
  return [...new Set(ids)];
}

function detailPage(session: Session, r: RequestLogDetail, events: EventSummary[]): Html {
  const eventRows = table(
    'Events of the resources this request touched',
    [
      { label: 'Event', cell: (e: EventSummary) => html`<a href="/dashboard/events/${e.id}">${e.event_type}</a>` },
      { label: 'Resource', cell: (e) => idCell(e.event_group_id, 'resource id') },
      { label: 'Time', cell: (e) => when(e.created_at) },
    ],
    events,
    'No events for the resources of this request.',
  );
  return appPage(
    session,
    'requests',
    `${r.method} ${r.path}`,
    html`<section class="card">
  ${facts([
    ['Status', statusBadge(r.status)],
    ['Request id', html`<code id="request-id">${r.request_id}</code> ${copyButton(r.request_id, 'request id')}`],
    ['Time', when(r.created_at)],
    ['Duration', `${r.duration_ms} ms`],
    ['Query', r.query ? html`<code>${r.query}</code>` : null],
    [
      'Idempotency-Key',
      r.idempotency_key ? html`<code>${r.idempotency_key}</code> ${copyButton(r.idempotency_key, 'Idempotency-Key')}` : null,
    ],
    ['Replayed', r.idempotency_key ? (r.idempotency_replayed ? 'Yes: the stored answer was sent again' : 'No') : null],
    ['API key', r.key_prefix ? html`<code>${r.key_prefix}</code>` : null],
  ])}
</section>
${body('Request body', 'request-body', r.request_body)}
${body('Response body', 'response-body', r.response_body)}
<section class="card" aria-labelledby="events-title"><h2 id="events-title">Events</h2>${eventRows}</section>
<p><a href="/dashboard/requests">Back to the request log</a></p>`,
  );
}

/** The API request log: a filtered, keyset-paginated list and each request's detail. */
export function requestLogRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    const scopeOf = (s: Session) => ({ tenantId: s.tenantId, environment: s.environment });
    // This process's buffered entries are written first, so a request just made is there.
    const flush = () => app.requestLog?.flush();

    app.get('/requests', async (request, reply) => {
      const session = sessionOf(request);
      const filters = filtersOf(request);
      const parsed = RequestLogQuery.safeParse({ ...filters, items_per_page: '50' });
      if (!parsed.success) {
        const message = parsed.error.issues.map((i) => `${i.path.join('.') || 'filter'}: ${i.message}`).join('; ');
        return sendPage(reply, listPage(session, originOf(request), filters, null, `Invalid filter. ${message}`));
      }
      await flush();
      const { status, ...query } = parsed.data;
      try {
        const page = await listRequests(deps.db, scopeOf(session), { ...query, status_class: status ? Number(status[0]) : undefined });
        return sendPage(reply, listPage(session, originOf(request), filters, page));
      } catch (err) {
        if (!(err instanceof AppError) || statusOf(err) !== 400) throw err;
        return sendPage(reply, listPage(session, originOf(request), filters, null, err.message));
      }
    });

    app.get('/requests/:id', async (request, reply) => {
      const session = sessionOf(request);
      const id = (request.params as { id: string }).id;
      if (!isUuid(id)) throw notFound('Request');
      await flush();
      const entry = await getRequest(deps.db, scopeOf(session), id, answerOfEvent);
      if (!entry) throw notFound('Request');
      const events = await eventsOf(deps.db, scopeOf(session), resourceIdsOf(entry));
      return sendPage(reply, detailPage(session, entry, events));
    });
  };
}
