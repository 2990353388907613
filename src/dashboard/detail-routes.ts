import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../http/deps.js';
import { notFound } from '../core/errors.js';
import { isUuid } from '../lib/ids.js';
import { getAccount, listAccounts } from '../modules/accounts/service.js';
import { statementFile } from '../modules/statements/service.js';
import type { AccountResponse } from '../modules/accounts/schema.js';
import { listAuthorizations } from '../modules/cards/payments.js';
import { ListCardsQuery, type AuthorizationResponse, type CardResponse } from '../modules/cards/schema.js';
import { getCard, listCards } from '../modules/cards/service.js';
import { getCustomer } from '../modules/customers/service.js';
import { listFeatures } from '../modules/features/service.js';
import { customerKycView, listDocuments } from '../modules/kyc/service.js';
import { settingsOf } from '../modules/tenants/service.js';
import type { TransactionResponse } from '../modules/transactions/schema.js';
import { listTransactions } from '../modules/transactions/service.js';
import type { TransferResponse } from '../modules/transfers/schema.js';
import { getTransfer } from '../modules/transfers/service.js';
import { eventsOf } from '../modules/webhooks/service.js';
import { eventTable } from './event-routes.js';
import { html, type Html } from './html.js';
import { appPage, badge, facts, idCell, idLink, table, when, type Column } from './layout.js';
import { renderList } from './list-view.js';
import { sendPage, sessionOf } from './replies.js';
import type { Session } from './service.js';

const scopeOf = (s: Session) => ({ tenantId: s.tenantId, environment: s.environment });

function idOf(request: FastifyRequest, what: string): string {
  const id = (request.params as { id: string }).id;
  if (!isUuid(id)) throw notFound(what);
  return id;
}

const section = (id: string, title: string, body: Html | string) =>
  html`<section class="card" aria-labelledby="${id}"><h2 id="${id}">${title}</h2>${body}</section>`;

export const accountColumns: Column<AccountResponse>[] = [
  { label: 'Label', cell: (a) => idLink('account', a.id, a.label) },
  { label: 'Currency', cell: (a) => a.currency },
  { label: 'Balance', cell: (a) => a.balance, numeric: true },
  { label: 'Available', cell: (a) => a.available_balance, numeric: true },
  { label: 'Status', cell: (a) => badge(a.status) },
];

export const cardColumns: Column<CardResponse>[] = [
  { label: 'Card', cell: (c) => idLink('card', c.id, c.masked_pan) },
  { label: 'Name on card', cell: (c) => c.name_on_card },
  { label: 'Type', cell: (c) => c.card_type },
  { label: 'Currency', cell: (c) => c.currency },
  { label: 'Status', cell: (c) => badge(c.status) },
  { label: 'Customer', cell: (c) => idLink('customer', c.customer_id) },
];

/** Transactions of one account with the balance after each: the running balance. */
const transactionColumns: Column<TransactionResponse>[] = [
  { label: 'Date', cell: (x) => when(x.date_created) },
  { label: 'Description', cell: (x) => x.description },
  { label: 'Type', cell: (x) => x.transaction_type },
  { label: 'Amount', cell: (x) => `${x.direction === 'out' ? '−' : ''}${x.amount} ${x.currency}`, numeric: true },
  { label: 'Running balance', cell: (x) => x.balance_after, numeric: true },
  { label: 'Status', cell: (x) => badge(x.status) },
  { label: 'Reference', cell: (x) => (x.reference && isUuid(x.reference) ? idLink('transfer', x.reference) : x.reference) },
];

function transferTarget(t: TransferResponse): Html | string | null {
  const d = t.destination;
  if (!d.id) return d.destination_type;
  if (d.destination_type === 'card') return idLink('card', d.id);
  if (d.destination_type === 'external_account') return html`${idCell(d.id, 'external account id')} (external account)`;
  return idLink('account', d.id);
}

/** One page per customer, account, transfer and card; the cards list. */
export function detailRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/customers/:id', async (request, reply) => {
      const session = sessionOf(request);
      const scope = scopeOf(session);
      const c = await getCustomer(deps.db, scope, idOf(request, 'Customer'), customerKycView);
      const settings = await settingsOf(deps.db, session.tenantId);
      const [docs, features, accounts, cards] = await Promise.all([
        listDocuments(deps.db, scope, c.id, { page: 1, items_per_page: 50 }),
        listFeatures(deps.db, { ...scope, settings }, deps.config, { customer_id: c.id, status: 'all' }),
        listAccounts(deps.db, scope, { page: 1, items_per_page: 50, customer_id: c.id } as never),
        listCards(deps.db, scope, { page: 1, items_per_page: 50, customer_id: c.id }),
      ]);
      const name = c.type === 'business' ? (c.business_name ?? '') : [c.first_name, c.last_name].filter(Boolean).join(' ');
      const body = html`<section class="card">${facts([
        ['Customer id', idCell(c.id, 'customer id')],
        ['Type', c.type],
        ['Email', c.email],
        ['Status', badge(c.status)],
        ['KYC state', badge(c.kyc_status)],
        ['Created', when(c.date_added)],
      ])}</section>
${section(
  'docs-title',
  'KYC documents',
  table(
    'KYC documents',
    [
      { label: 'Type', cell: (d: (typeof docs.documents)[number]) => d.IDType },
      { label: 'Side', cell: (d) => d.IDSubType ?? null },
      { label: 'File', cell: (d) => d.OriginalFilename },
      { label: 'Size (bytes)', cell: (d) => d.size_bytes, numeric: true },
      { label: 'Uploaded', cell: (d) => when(d.date_created) },
    ],
    docs.documents,
    'No documents uploaded.',
  ),
)}
${section(
  'features-title',
  'Features',
  table(
    'Features',
    [
      { label: 'Feature', cell: (f: (typeof features.features)[number]) => f.name },
      { label: 'Id', cell: (f) => html`<code>${f.feature_id}</code>` },
      { label: 'Status', cell: (f) => badge(f.status) },
    ],
    features.features,
    'No features offered.',
  ),
)}
${section('accounts-title', 'Accounts', table('Accounts', accountColumns, accounts.items, 'No accounts.'))}
${section('cards-title', 'Cards', table('Cards', cardColumns, cards.items, 'No cards.'))}
${section('events-title', 'Events', eventTable('Events', await eventsOf(deps.db, scope, [c.id]), 'No events.'))}`;
      return sendPage(reply, appPage(session, 'customers', `Customer ${name}`, body));
    });

    app.get('/accounts/:id', async (request, reply) => {
      const session = sessionOf(request);
      const scope = scopeOf(session);
      const a = await getAccount(deps.db, scope, idOf(request, 'Account'));
      const [recent, holds] = await Promise.all([
        listTransactions(deps.db, scope, { page: 1, items_per_page: 50, account_id: a.id } as never),
        listTransactions(deps.db, scope, { page: 1, items_per_page: 50, account_id: a.id, status: 'pending' } as never),
      ]);
      const body = html`<section class="card">${facts([
        ['Account id', idCell(a.id, 'account id')],
        ['Label', a.label],
        ['Currency', a.currency],
        ['Balance (posted)', a.balance],
        ['Available (posted minus holds)', a.available_balance],
        ['Status', badge(a.status)],
        ['Account number', a.account_number],
        ['Customer', a.customer_id ? idLink('customer', a.customer_id) : 'The business itself'],
      ])}</section>
${section('holds-title', 'Holds (pending)', table('Holds', transactionColumns, holds.items, 'No holds.'))}
${section(
  'tx-title',
  'Transactions',
  html`${table('Transactions', transactionColumns, recent.items, 'No transactions yet.')}
<p><a href="/dashboard/transactions?account_id=${a.id}">All transactions of this account</a> · <a href="/dashboard/accounts/${a.id}/statement" download>Statement of this month (PDF)</a></p>`,
)}`;
      return sendPage(reply, appPage(session, 'accounts', `Account ${a.label}`, body));
    });

    app.get('/accounts/:id/statement', async (request, reply) => {
      const file = await statementFile(deps.db, scopeOf(sessionOf(request)), idOf(request, 'Account'), {}, 'pdf');
      return reply.header('Content-Disposition', `attachment; filename="${file.name}"`).type(file.contentType).send(file.body);
    });

    app.get('/transfers/:id', async (request, reply) => {
      const session = sessionOf(request);
      const scope = scopeOf(session);
      const t = await getTransfer(deps.db, scope, idOf(request, 'Transfer'));
      const timeline = await eventsOf(deps.db, scope, [t.id]);
      const body = html`<section class="card">${facts([
        ['Transfer id', idCell(t.id, 'transfer id')],
        ['Status', badge(t.transfer_status)],
        ['Amount', `${t.amount} ${t.currency}`],
        ['Fee', t.fee],
        ['From', idLink('account', t.source.id)],
        ['To', transferTarget(t)],
        ['Failure reason', t.failure_reason],
        ['Reference', t.reference],
        ['Created', when(t.date_created)],
        ['Updated', when(t.date_updated)],
      ])}
<p><a href="/dashboard/requests?path=${encodeURIComponent(`/v1/transfers/${t.id}`)}">API requests naming this transfer</a></p></section>
${section(
  'timeline-title',
  'Status timeline',
  html`<ol class="timeline">${timeline.map((e) => html`<li>${when(e.created_at)} <a href="/dashboard/events/${e.id}">${e.event_type}</a></li>`)}</ol>${timeline.length === 0 ? html`<p class="empty">No events yet.</p>` : ''}`,
)}`;
      return sendPage(reply, appPage(session, 'transfers', `Transfer ${t.amount} ${t.currency}`, body));
    });

    app.get('/cards', async (request, reply) =>
      sendPage(
        reply,
        await renderList<ListCardsQuery, CardResponse>(request, sessionOf(request), {
          section: 'cards',
          title: 'Cards',
          schema: ListCardsQuery,
          fields: [
            { name: 'customer_id', label: 'Customer id' },
            { name: 'status', label: 'Status', type: 'select', options: ['inactive', 'active', 'freeze', 'blocked', 'lost', 'stolen'] },
            { name: 'card_type', label: 'Type', type: 'select', options: ['virtual', 'physical'] },
          ],
          columns: cardColumns,
          empty: 'No cards in this environment match.',
          load: (scope, query) => listCards(deps.db, scope, query),
        }),
      ),
    );

    app.get('/cards/:id', async (request, reply) => {
      const session = sessionOf(request);
      const scope = scopeOf(session);
      const c = await getCard(deps.db, scope, idOf(request, 'Card'));
      const auths = await listAuthorizations(deps.db, scope, c.id, { page: 1, items_per_page: 50 });
      const sc = c.spending_controls;
      const body = html`<section class="card">${facts([
        ['Card', html`<code>${c.masked_pan}</code>`],
        ['Card id', idCell(c.id, 'card id')],
        ['Status', badge(c.status)],
        ['Type', c.card_type],
        ['Expiry', c.expiry],
        ['Currency', c.currency],
        ['Customer', idLink('customer', c.customer_id)],
      ])}</section>
${section(
  'controls-title',
  'Spending controls',
  facts([
    ['Controls on', sc.activated ? 'Yes' : 'No'],
    ['Per transaction', sc.single_transaction_limit ?? 'No limit'],
    ['Daily', sc.daily_transaction_limit ?? 'No limit'],
    ['Monthly', sc.monthly_transaction_limit ?? 'No limit'],
    ['Allowed categories', sc.allowed_merchant_categories.join(', ') || 'Any'],
    ['Blocked categories', sc.blocked_merchant_categories.join(', ') || 'None'],
  ]),
)}
${section(
  'auth-title',
  'Authorizations',
  table(
    'Authorizations',
    [
      { label: 'Date', cell: (x: AuthorizationResponse) => when(x.date_created) },
      { label: 'Merchant', cell: (x) => x.merchant_name },
      { label: 'Amount', cell: (x) => `${x.amount} ${x.currency}`, numeric: true },
      { label: 'Captured', cell: (x) => x.captured_amount, numeric: true },
      { label: 'Status', cell: (x) => badge(x.status) },
      { label: 'Decline reason', cell: (x) => x.decline_reason },
    ],
    auths.items,
    'No authorizations.',
  ),
)}`;
      return sendPage(reply, appPage(session, 'cards', `Card ${c.masked_pan}`, body));
    });
  };
}
