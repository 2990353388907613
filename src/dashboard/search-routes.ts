import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import type { Scope } from '../core/context.js';
import { isUuid } from '../lib/ids.js';
import { listCustomers } from '../modules/customers/service.js';
import { customerKycView } from '../modules/kyc/service.js';
import { displayName } from './data-routes.js';
import { transactionPath } from './detail-parts.js';
import { html, type Html } from './html.js';
import { alert, appPage, detailPath, idCell, table, type Section } from './layout.js';
import { queryValues } from './list-view.js';
import { seeOther, sendPage, sessionOf } from './replies.js';
import { findById, findByText, type HitKind, type SearchHit } from './search-repo.js';
import { searchForm } from './search-form.js';

/** Longest query accepted: ids, emails and references are all shorter. */
const MAX_QUERY = 200;
/** Name matches shown beside the exact ones (the customers list's keyword search, trigram-indexed). */
const NAME_MATCHES = 10;
/** The keyword search needs three characters to use its trigram index. */
const MIN_KEYWORD = 3;

const KIND_LABEL: Record<HitKind, string> = {
  customer: 'Customer',
  account: 'Account',
  transfer: 'Transfer',
  transaction: 'Transaction',
  card: 'Card',
  webhook_endpoint: 'Webhook endpoint',
  webhook_delivery: 'Webhook delivery',
  event: 'Event',
  request: 'API request',
};

function hitPath(hit: Pick<SearchHit, 'kind' | 'id'>): string {
  switch (hit.kind) {
    case 'transaction':
      return transactionPath(hit.id);
    case 'webhook_endpoint':
      return `/dashboard/webhooks/endpoints/${encodeURIComponent(hit.id)}`;
    case 'webhook_delivery':
      return `/dashboard/webhooks/deliveries/${encodeURIComponent(hit.id)}`;
    default:
      return detailPath(hit.kind, hit.id);
  }
}

/** Each object once, in the order found. */
function distinct(hits: SearchHit[]): SearchHit[] {
  const seen = new Set<string>();
  return hits.filter((h) => {
    const key = `${h.kind}:${h.id}`;
    return seen.has(key) ? false : (seen.add(key), true);
  });
}

/** Exact matches first, then customers whose name or email holds the text. */
async function search(deps: Deps, scope: Scope, q: string): Promise<SearchHit[]> {
  if (isUuid(q)) return distinct(await findById(deps.db, scope, q.toLowerCase()));
  const [exact, named] = await Promise.all([
    findByText(deps.db, scope, q),
    q.length >= MIN_KEYWORD
      ? listCustomers(deps.db, scope, { page: 1, items_per_page: NAME_MATCHES, keyword: q }, customerKycView)
      : Promise.resolve({ items: [] }),
  ]);
  const byName: SearchHit[] = named.items.map((c) => ({ kind: 'customer', id: c.id, label: displayName(c), note: c.email }));
  return distinct([...exact, ...byName]);
}

function resultsBody(q: string, hits: SearchHit[]): Html {
  const form = html`<div class="card">${searchForm('search-page-q', q)}</div>`;
  if (q === '') {
    return html`${form}<p>Search by any id (customer, account, transfer, transaction, card, webhook endpoint or delivery, event,
API request), a customer's email or external id, a transfer's client reference, a transaction's reference or a request id.</p>`;
  }
  return html`${form}${table(
    `Results for ${q}`,
    [
      { label: 'What', cell: (h: SearchHit) => KIND_LABEL[h.kind] },
      { label: 'Name', cell: (h) => html`<a href="${hitPath(h)}">${h.label || h.id}</a>` },
      { label: 'Details', cell: (h) => h.note },
      { label: 'Id', cell: (h) => idCell(h.id) },
    ],
    hits,
    `Nothing in this environment matches “${q}”. Ids, emails and references must match exactly; names may match in part.`,
  )}`;
}

/** The header's search: one GET form; an id that names exactly one object opens its page. */
export function searchRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/search', async (request, reply) => {
      const session = sessionOf(request);
      // Not a section of the navigation: no link is marked current, and the environment switch comes back here.
      const page = (body: Html) => appPage(session, 'search' as Section, 'Search', body);
      const q = queryValues(request, ['q']).q ?? '';
      if (q.length > MAX_QUERY) {
        return sendPage(reply, page(html`${alert('error', `Search for at most ${MAX_QUERY} characters.`)}${resultsBody('', [])}`), 400);
      }
      const scope = { tenantId: session.tenantId, environment: session.environment };
      const hits = q === '' ? [] : await search(deps, scope, q);
      if (isUuid(q) && hits.length === 1) return seeOther(reply, hitPath(hits[0]!));
      return sendPage(reply, page(resultsBody(q, hits)));
    });
  };
}
