import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import { isUuid } from '../lib/ids.js';
import {
  ListTransactionsQuery,
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  type TransactionResponse,
} from '../modules/transactions/schema.js';
import { getTransaction, listTransactions } from '../modules/transactions/service.js';
import { ListTransfersQuery, TRANSFER_STATUSES, type TransferResponse } from '../modules/transfers/schema.js';
import { getTransfer, listTransfers } from '../modules/transfers/service.js';
import { eventsOf } from '../modules/webhooks/service.js';
import { idOf, scopeOf, section, transactionPath } from './detail-parts.js';
import { html, type Html } from './html.js';
import { appPage, badge, facts, idCell, idLink, when, type DetailKind } from './layout.js';
import { renderList, type ListView } from './list-view.js';
import {
  namesOfTransaction,
  namesOfTransfer,
  transactionNames,
  transferNames,
  type TransactionNames,
  type TransferNames,
} from './names-repo.js';
import { party } from './names.js';
import { sendPage, sessionOf } from './replies.js';

const DATE_FIELDS = [
  { name: 'from', label: 'From', type: 'date' },
  { name: 'to', label: 'To', type: 'date' },
] as const;

type NamedTransfer = TransferResponse & { extra?: TransferNames };
type NamedTransaction = TransactionResponse & { extra?: TransactionNames };

/** The page kind of a transfer's destination (an external account has no page here). */
function destinationKind(t: TransferResponse): DetailKind | null {
  const type = t.destination.destination_type;
  if (type === 'card') return 'card';
  return type === 'external_account' ? null : 'account';
}

const fromOf = (t: TransferResponse, n: TransferNames | undefined) =>
  party('account', t.source.id, n?.from_label, { id: n?.from_customer_id ?? t.customer_id, name: n?.from_customer });

function toOf(t: TransferResponse, n: TransferNames | undefined): Html | string | null {
  if (!t.destination.id) return t.destination.destination_type;
  return party(destinationKind(t), t.destination.id, n?.to_label, { id: n?.to_customer_id, name: n?.to_customer });
}

/** The account of a transaction and the other side of its movement, each with its owner. */
const accountOf = (x: TransactionResponse, n: TransactionNames | undefined) =>
  party('account', x.account_id, n?.account_label, { id: x.customer_id, name: n?.customer });
const counterpartyOf = (n: TransactionNames | undefined) =>
  n?.other_id ? party('account', n.other_id, n.other_label, { id: n.other_customer_id, name: n.other_customer }) : null;

const referenceOf = (x: TransactionResponse) =>
  x.reference && isUuid(x.reference) ? idLink('transfer', x.reference) : idCell(x.reference);

function transfersView(deps: Deps): ListView<ListTransfersQuery, NamedTransfer> {
  return {
    section: 'transfers',
    title: 'Transfers',
    schema: ListTransfersQuery,
    fields: [
      { name: 'status', label: 'Status', type: 'select', options: TRANSFER_STATUSES },
      { name: 'account_id', label: 'Account id' },
      { name: 'customer_id', label: 'Customer id' },
      ...DATE_FIELDS,
    ],
    columns: [
      { label: 'Transfer', cell: (x) => idLink('transfer', x.id, x.client_reference ?? undefined) },
      { label: 'Amount', cell: (x) => `${x.amount} ${x.currency}`, numeric: true },
      { label: 'Fee', cell: (x) => x.fee, numeric: true },
      { label: 'Status', cell: (x) => badge(x.transfer_status) },
      { label: 'From', cell: (x) => fromOf(x, x.extra) },
      { label: 'To', cell: (x) => toOf(x, x.extra) },
      { label: 'Created', cell: (x) => when(x.date_created) },
    ],
    empty: 'No transfers in this environment match.',
    load: (scope, query) => listTransfers(deps.db, scope, query, transferNames),
  };
}

function transactionsView(deps: Deps): ListView<ListTransactionsQuery, NamedTransaction> {
  return {
    section: 'transactions',
    title: 'Transactions',
    schema: ListTransactionsQuery,
    fields: [
      { name: 'account_id', label: 'Account id' },
      { name: 'direction', label: 'Direction', type: 'select', options: ['in', 'out'] },
      { name: 'status', label: 'Status', type: 'select', options: TRANSACTION_STATUSES },
      { name: 'transaction_type', label: 'Type', type: 'select', options: TRANSACTION_TYPES },
      { name: 'currency', label: 'Currency' },
      { name: 'reference', label: 'Reference' },
      ...DATE_FIELDS,
    ],
    columns: [
      { label: 'Date', cell: (x) => html`<a href="${transactionPath(x.id)}">${when(x.date_created)}</a>` },
      { label: 'Description', cell: (x) => x.description },
      { label: 'Type', cell: (x) => x.transaction_type },
      { label: 'Amount', cell: (x) => `${x.direction === 'out' ? '−' : ''}${x.amount} ${x.currency}`, numeric: true },
      { label: 'Balance after', cell: (x) => x.balance_after, numeric: true },
      { label: 'Status', cell: (x) => badge(x.status) },
      { label: 'Account', cell: (x) => accountOf(x, x.extra) },
      { label: 'Counterparty', cell: (x) => counterpartyOf(x.extra) },
      { label: 'Reference', cell: referenceOf },
    ],
    empty: 'No transactions in this environment match.',
    load: (scope, query) => listTransactions(deps.db, scope, query, transactionNames),
  };
}

function transferPage(t: TransferResponse, names: TransferNames | undefined, timeline: Awaited<ReturnType<typeof eventsOf>>): Html {
  return html`<section class="card">${facts([
    ['Transfer id', idCell(t.id, 'transfer id')],
    ['Status', badge(t.transfer_status)],
    ['Amount', `${t.amount} ${t.currency}`],
    ['Fee', t.fee],
    ['From', fromOf(t, names)],
    ['To', toOf(t, names)],
    ['Failure reason', t.failure_reason],
    ['Reference', t.reference],
    ['Client reference', t.client_reference],
    ['Created', when(t.date_created)],
    ['Updated', when(t.date_updated)],
  ])}
<p><a href="/dashboard/requests?path=${encodeURIComponent(`/v1/transfers/${t.id}`)}">API requests naming this transfer</a></p></section>
${section(
  'timeline-title',
  'Status timeline',
  html`<ol class="timeline">${timeline.map((e) => html`<li>${when(e.created_at)} <a href="/dashboard/events/${e.id}">${e.event_type}</a></li>`)}</ol>${timeline.length === 0 ? html`<p class="empty">No events yet.</p>` : ''}`,
)}`;
}

function transactionPage(x: TransactionResponse, names: TransactionNames | undefined): Html {
  return html`<section class="card">${facts([
    ['Transaction id', idCell(x.id, 'transaction id')],
    ['Status', badge(x.status)],
    ['Amount', `${x.direction === 'out' ? '−' : ''}${x.amount} ${x.currency}`],
    ['Fee', x.fee],
    ['Type', x.transaction_type],
    ['Description', x.description],
    ['Account', accountOf(x, names)],
    [x.direction === 'out' ? 'To' : 'From', counterpartyOf(names)],
    ['Balance before', x.balance_before],
    ['Balance after', x.balance_after],
    ['Reference', referenceOf(x)],
    ['Client reference', x.client_reference],
    ['Created', when(x.date_created)],
  ])}</section>`;
}

/** Money movements: the transfers and transactions lists and their pages, with names beside ids. */
export function moneyRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/transfers', async (request, reply) => sendPage(reply, await renderList(request, sessionOf(request), transfersView(deps))));
    app.get('/transactions', async (request, reply) =>
      sendPage(reply, await renderList(request, sessionOf(request), transactionsView(deps))),
    );

    app.get('/transfers/:id', async (request, reply) => {
      const session = sessionOf(request);
      const scope = scopeOf(session);
      const id = idOf(request, 'Transfer');
      const [t, names, timeline] = await Promise.all([
        getTransfer(deps.db, scope, id),
        namesOfTransfer(deps.db, scope, id),
        eventsOf(deps.db, scope, [id]),
      ]);
      return sendPage(reply, appPage(session, 'transfers', `Transfer ${t.amount} ${t.currency}`, transferPage(t, names, timeline)));
    });

    app.get('/transactions/:id', async (request, reply) => {
      const session = sessionOf(request);
      const scope = scopeOf(session);
      const id = idOf(request, 'Transaction');
      const [x, names] = await Promise.all([getTransaction(deps.db, scope, id), namesOfTransaction(deps.db, scope, id)]);
      const title = `Transaction ${x.direction === 'out' ? '−' : ''}${x.amount} ${x.currency}`;
      return sendPage(reply, appPage(session, 'transactions', title, transactionPage(x, names)));
    });
  };
}
