import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import { listAccounts } from '../modules/accounts/service.js';
import { listCards } from '../modules/cards/service.js';
import type { CustomerResponse } from '../modules/customers/schema.js';
import { getCustomer } from '../modules/customers/service.js';
import { listFeatures } from '../modules/features/service.js';
import { customerKycView, listDocuments } from '../modules/kyc/service.js';
import { settingsOf } from '../modules/tenants/service.js';
import { eventsOf } from '../modules/webhooks/service.js';
import { displayName } from './data-routes.js';
import { cardColumns } from './detail-routes.js';
import { idOf, scopeOf, section } from './detail-parts.js';
import { cardOwner } from './names-repo.js';
import { eventTable } from './event-routes.js';
import { html, type Html } from './html.js';
import { appPage, badge, facts, idCell, idLink, table, when, type Column } from './layout.js';
import { sendPage, sessionOf } from './replies.js';
import type { Session } from './service.js';

type Documents = Awaited<ReturnType<typeof listDocuments>>['documents'];
type Features = Awaited<ReturnType<typeof listFeatures>>['features'];
type Accounts = Awaited<ReturnType<typeof listAccounts>>['items'];

const accountColumns: Column<Accounts[number]>[] = [
  { label: 'Label', cell: (a) => idLink('account', a.id, a.label) },
  { label: 'Currency', cell: (a) => a.currency },
  { label: 'Balance', cell: (a) => a.balance, numeric: true },
  { label: 'Available', cell: (a) => a.available_balance, numeric: true },
  { label: 'Status', cell: (a) => badge(a.status) },
];

const documentColumns: Column<Documents[number]>[] = [
  { label: 'Type', cell: (d) => d.IDType },
  { label: 'Side', cell: (d) => d.IDSubType ?? null },
  { label: 'File', cell: (d) => d.OriginalFilename },
  { label: 'Size (bytes)', cell: (d) => d.size_bytes, numeric: true },
  { label: 'Uploaded', cell: (d) => when(d.date_created) },
];

function addressOf(c: CustomerResponse): string | null {
  const a = c.address;
  const parts = [a.address_line1, a.address_line2, [a.postal_code, a.city].filter(Boolean).join(' '), a.state, a.country];
  return parts.filter((p) => p && p.trim() !== '').join(', ') || null;
}

/** Who the customer is and how to reach them: what a person looks for first. */
function detailsCard(c: CustomerResponse): Html {
  const person: [string, Html | string | null][] =
    c.type === 'business'
      ? [
          ['Business name', c.business_name ?? null],
          ['Registration number', c.registration_number ?? null],
        ]
      : [
          ['Name', [c.first_name, c.middle_name, c.last_name].filter(Boolean).join(' ') || null],
          ['Date of birth', c.date_of_birth],
        ];
  return html`<section class="card" aria-labelledby="details-title"><h2 id="details-title">Details</h2>${facts([
    ...person,
    ['Email', c.email],
    ['Phone', c.phone || null],
    ['Address', addressOf(c)],
    ['Type', c.type],
    ['Status', badge(c.status)],
    ['KYC state', badge(c.kyc_status)],
    ['Customer id', idCell(c.id, 'customer id')],
    ['External id', c.external_id ?? null],
    ['Created', when(c.date_added)],
  ])}</section>`;
}

/** Features in one line: the active ones by name, the others folded away. */
function featuresCard(features: Features): Html {
  const active = features.filter((f) => f.status === 'active');
  const inactive = features.filter((f) => f.status !== 'active');
  const item = (f: Features[number]) => html`<li><code>${f.feature_id}</code> ${badge(f.status)}</li>`;
  return section(
    'features-title',
    'Features',
    html`${active.length > 0 ? html`<ul class="inline-list">${active.map(item)}</ul>` : html`<p class="empty">No active features.</p>`}
${inactive.length > 0 ? html`<details><summary>${inactive.length} not active</summary><ul class="inline-list">${inactive.map(item)}</ul></details>` : ''}`,
  );
}

async function customerPage(deps: Deps, session: Session, id: string): Promise<{ c: CustomerResponse; body: Html }> {
  const scope = scopeOf(session);
  const c = await getCustomer(deps.db, scope, id, customerKycView);
  const settings = await settingsOf(deps.db, session.tenantId);
  const [accounts, cards, docs, events, features] = await Promise.all([
    listAccounts(deps.db, scope, { page: 1, items_per_page: 50, customer_id: c.id } as never),
    listCards(deps.db, scope, { page: 1, items_per_page: 50, customer_id: c.id }, cardOwner),
    listDocuments(deps.db, scope, c.id, { page: 1, items_per_page: 50 }),
    eventsOf(deps.db, scope, [c.id], 'desc'),
    listFeatures(deps.db, { ...scope, settings }, { customer_id: c.id, status: 'all' }, deps.config),
  ]);
  const body = html`${detailsCard(c)}
${section('accounts-title', 'Accounts', table('Accounts', accountColumns, accounts.items, 'No accounts.'))}
${section('cards-title', 'Cards', table('Cards', cardColumns, cards.items, 'No cards.'))}
${section('docs-title', 'KYC documents', table('KYC documents', documentColumns, docs.documents, 'No documents uploaded.'))}
${section('events-title', 'Events (newest first)', eventTable('Events', events, 'No events.'))}
${featuresCard(features.features)}`;
  return { c, body };
}

/** The customer's page: details and accounts first, then cards, documents, events and features. */
export function customerRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/customers/:id', async (request, reply) => {
      const session = sessionOf(request);
      const { c, body } = await customerPage(deps, session, idOf(request, 'Customer'));
      return sendPage(reply, appPage(session, 'customers', `Customer ${displayName(c)}`, body));
    });
  };
}
