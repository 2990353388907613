import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import type { Scope } from '../core/context.js';
import { balancesBefore } from '../ledger/index.js';
import { isUuid, uuidv7LowerBound } from '../lib/ids.js';
import { formatAmount } from '../lib/money.js';
import { getAccount } from '../modules/accounts/service.js';
import type { AccountResponse } from '../modules/accounts/schema.js';
import { statementFile } from '../modules/statements/service.js';
import { listAuthorizations } from '../modules/cards/payments.js';
import { ListCardsQuery, type AuthorizationResponse, type CardResponse } from '../modules/cards/schema.js';
import { getCard, listCards } from '../modules/cards/service.js';
import type { TransactionResponse } from '../modules/transactions/schema.js';
import { listTransactions } from '../modules/transactions/service.js';
import { daysEnding, svgChart } from './chart.js';
import { idOf, scopeOf, section, transactionPath } from './detail-parts.js';
import { html, type Html } from './html.js';
import { appPage, badge, facts, idCell, idLink, table, when, type Column } from './layout.js';
import { renderList, type ListView } from './list-view.js';
import { cardOwner, customerNameOf, transactionNames, type OwnerName, type TransactionNames } from './names-repo.js';
import { named, party } from './names.js';
import { sendPage, sessionOf } from './replies.js';

/** Days of the account's balance chart. */
const CHART_DAYS = 30;

type NamedCard = CardResponse & { extra?: OwnerName };
type NamedTransaction = TransactionResponse & { extra?: TransactionNames };

export const cardColumns: Column<NamedCard>[] = [
  { label: 'Card', cell: (c) => idLink('card', c.id, c.masked_pan) },
  { label: 'Name on card', cell: (c) => c.name_on_card },
  { label: 'Customer', cell: (c) => named('customer', c.customer_id, c.extra?.customer) },
  { label: 'Type', cell: (c) => c.card_type },
  { label: 'Currency', cell: (c) => c.currency },
  { label: 'Status', cell: (c) => badge(c.status) },
];

/** Transactions of one account with the balance after each (the running balance) and the other side. */
const transactionColumns: Column<NamedTransaction>[] = [
  { label: 'Date', cell: (x) => html`<a href="${transactionPath(x.id)}">${when(x.date_created)}</a>` },
  { label: 'Description', cell: (x) => x.description },
  { label: 'Type', cell: (x) => x.transaction_type },
  { label: 'Amount', cell: (x) => `${x.direction === 'out' ? '−' : ''}${x.amount} ${x.currency}`, numeric: true },
  { label: 'Running balance', cell: (x) => x.balance_after, numeric: true },
  { label: 'Status', cell: (x) => badge(x.status) },
  {
    label: 'Counterparty',
    cell: (x) =>
      x.extra?.other_id
        ? party('account', x.extra.other_id, x.extra.other_label, { id: x.extra.other_customer_id, name: x.extra.other_customer })
        : null,
  },
  { label: 'Reference', cell: (x) => (x.reference && isUuid(x.reference) ? idLink('transfer', x.reference) : idCell(x.reference)) },
];

/**
 * The account's closing balance on each of the last CHART_DAYS days (UTC), as a line: one read of
 * the ledger's history index (one seek per day). Heights are numbers for drawing only; the
 * tooltips show the decimal amounts.
 */
async function balanceChart(deps: Deps, scope: Scope, a: AccountResponse): Promise<Html> {
  const days = daysEnding(new Date(), CHART_DAYS);
  const bounds = days.map((d) => uuidv7LowerBound(new Date(Date.parse(`${d}T00:00:00Z`) + 86_400_000)));
  const closing = await balancesBefore(deps.db, scope, a.id, bounds);
  const points = days.map((label, i) => {
    const amount = formatAmount(closing[i] ?? 0n, a.currency);
    return { label, value: Number(amount), text: `${amount} ${a.currency}` };
  });
  return html`<figure class="card chart-card" id="balance-chart"><figcaption>Closing balance per day, last ${CHART_DAYS} days (${a.currency})</figcaption>${svgChart(
    points,
    { title: `Closing balance of ${a.label} per day in ${a.currency}, last ${CHART_DAYS} days`, kind: 'line' },
  )}</figure>`;
}

async function accountPage(deps: Deps, scope: Scope, id: string): Promise<{ a: AccountResponse; body: Html }> {
  const a = await getAccount(deps.db, scope, id);
  const [owner, chart, recent, holds] = await Promise.all([
    customerNameOf(deps.db, scope, a.customer_id),
    balanceChart(deps, scope, a),
    listTransactions(deps.db, scope, { page: 1, items_per_page: 50, account_id: a.id } as never, transactionNames),
    listTransactions(deps.db, scope, { page: 1, items_per_page: 50, account_id: a.id, status: 'pending' } as never, transactionNames),
  ]);
  const body = html`<section class="card">${facts([
    ['Account id', idCell(a.id, 'account id')],
    ['Label', a.label],
    ['Customer', a.customer_id ? named('customer', a.customer_id, owner) : 'The business itself'],
    ['Currency', a.currency],
    ['Balance (posted)', a.balance],
    ['Available (posted minus holds)', a.available_balance],
    ['Status', badge(a.status)],
    ['Account number', a.account_number],
  ])}</section>
${chart}
${section('holds-title', 'Holds (pending)', table('Holds', transactionColumns, holds.items, 'No holds.'))}
${section(
  'tx-title',
  'Transactions',
  html`${table('Transactions', transactionColumns, recent.items, 'No transactions yet.')}
<p><a href="/dashboard/transactions?account_id=${a.id}">All transactions of this account</a> · <a href="/dashboard/accounts/${a.id}/statement" download>Statement of this month (PDF)</a></p>`,
)}`;
  return { a, body };
}

const authorizationColumns: Column<AuthorizationResponse>[] = [
  { label: 'Date', cell: (x) => when(x.date_created) },
  { label: 'Merchant', cell: (x) => x.merchant_name },
  { label: 'Amount', cell: (x) => `${x.amount} ${x.currency}`, numeric: true },
  { label: 'Captured', cell: (x) => x.captured_amount, numeric: true },
  { label: 'Status', cell: (x) => badge(x.status) },
  { label: 'Decline reason', cell: (x) => x.decline_reason },
];

async function cardPage(deps: Deps, scope: Scope, id: string): Promise<{ c: CardResponse; body: Html }> {
  const c = await getCard(deps.db, scope, id);
  const [owner, auths] = await Promise.all([
    customerNameOf(deps.db, scope, c.customer_id),
    listAuthorizations(deps.db, scope, c.id, { page: 1, items_per_page: 50 }),
  ]);
  const sc = c.spending_controls;
  const body = html`<section class="card">${facts([
    ['Card', html`<code>${c.masked_pan}</code>`],
    ['Card id', idCell(c.id, 'card id')],
    ['Customer', named('customer', c.customer_id, owner)],
    ['Status', badge(c.status)],
    ['Type', c.card_type],
    ['Expiry', c.expiry],
    ['Currency', c.currency],
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
${section('auth-title', 'Authorizations', table('Authorizations', authorizationColumns, auths.items, 'No authorizations.'))}`;
  return { c, body };
}

function cardsView(deps: Deps): ListView<ListCardsQuery, NamedCard> {
  return {
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
    load: (scope, query) => listCards(deps.db, scope, query, cardOwner),
  };
}

/** One page per account and card; the cards list. */
export function detailRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/accounts/:id', async (request, reply) => {
      const session = sessionOf(request);
      const { a, body } = await accountPage(deps, scopeOf(session), idOf(request, 'Account'));
      return sendPage(reply, appPage(session, 'accounts', `Account ${a.label}`, body));
    });

    app.get('/accounts/:id/statement', async (request, reply) => {
      const file = await statementFile(deps.db, scopeOf(sessionOf(request)), idOf(request, 'Account'), {}, 'pdf');
      return reply.header('Content-Disposition', `attachment; filename="${file.name}"`).type(file.contentType).send(file.body);
    });

    app.get('/cards', async (request, reply) => sendPage(reply, await renderList(request, sessionOf(request), cardsView(deps))));

    app.get('/cards/:id', async (request, reply) => {
      const session = sessionOf(request);
      const { c, body } = await cardPage(deps, scopeOf(session), idOf(request, 'Card'));
      return sendPage(reply, appPage(session, 'cards', `Card ${c.masked_pan}`, body));
    });
  };
}
