import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import type { Scope } from '../core/context.js';
import { formatAmount } from '../lib/money.js';
import { ListCustomersQuery, type CustomerResponse } from '../modules/customers/schema.js';
import { listCustomers } from '../modules/customers/service.js';
import { customerKycView } from '../modules/kyc/service.js';
import { AccountStatus, ListAccountsQuery, type AccountResponse } from '../modules/accounts/schema.js';
import { listAccounts } from '../modules/accounts/service.js';
import { html, type Html } from './html.js';
import { badge, idLink, when } from './layout.js';
import { renderList, type ListView } from './list-view.js';
import { accountOwner, type OwnerName } from './names-repo.js';
import { named } from './names.js';
import { balancesByCurrency } from './overview-repo.js';
import { sendPage, sessionOf } from './replies.js';

const DATE_FIELDS = [
  { name: 'from', label: 'From', type: 'date' },
  { name: 'to', label: 'To', type: 'date' },
] as const;

/** A customer's display name: the business name, or the person's names (the id when there is none). */
export function displayName(c: CustomerResponse): string {
  return (c.type === 'business' ? c.business_name : [c.first_name, c.last_name].filter(Boolean).join(' ')) || c.id;
}

function customersView(deps: Deps): ListView<ListCustomersQuery, CustomerResponse> {
  return {
    section: 'customers',
    title: 'Customers',
    schema: ListCustomersQuery,
    fields: [
      { name: 'keyword', label: 'Name or email' },
      { name: 'type', label: 'Type', type: 'select', options: ['individual', 'business'] },
      { name: 'status', label: 'Status', type: 'select', options: ['active', 'inactive', 'blocked'] },
      {
        name: 'kyc_status',
        label: 'KYC',
        type: 'select',
        options: ['not_started', 'init', 'pending', 'manual_review', 'approved', 'rejected'],
      },
      ...DATE_FIELDS,
    ],
    columns: [
      { label: 'Name', cell: (c) => idLink('customer', c.id, displayName(c)) },
      { label: 'Email', cell: (c) => c.email },
      { label: 'Type', cell: (c) => c.type },
      { label: 'Status', cell: (c) => badge(c.status) },
      { label: 'KYC', cell: (c) => badge(c.kyc_status) },
      { label: 'Id', cell: (c) => idLink('customer', c.id) },
      { label: 'Created', cell: (c) => when(c.date_added) },
    ],
    empty: 'No customers in this environment match.',
    load: (scope, query) => listCustomers(deps.db, scope, query, customerKycView),
  };
}

/** The sum of the environment's account balances per currency (one grouped read), above the list. */
async function accountTotals(deps: Deps, scope: Scope): Promise<Html> {
  const totals = await balancesByCurrency(deps.db, scope);
  if (totals.length === 0) return html``;
  return html`<section class="card totals" aria-labelledby="totals-title">
  <h2 id="totals-title">Totals per currency <small>(every account of this environment)</small></h2>
  <dl class="facts">${totals.map(
    (t) =>
      html`<dt>${t.currency} <small>(${t.accounts} ${t.accounts === 1 ? 'account' : 'accounts'})</small></dt><dd data-total="${t.currency}">${formatAmount(t.posted, t.currency)} ${t.currency} <small>· available ${formatAmount(t.available, t.currency)}</small></dd>`,
  )}</dl>
</section>`;
}

type NamedAccount = AccountResponse & { extra?: OwnerName };

/** An account's owner: the customer's name linked, or the business itself. */
const ownerOf = (a: { customer_id?: string | null | undefined }, n: OwnerName | undefined) =>
  a.customer_id ? named('customer', a.customer_id, n?.customer) : 'Your business';

function accountsView(deps: Deps): ListView<ListAccountsQuery, NamedAccount> {
  return {
    section: 'accounts',
    title: 'Accounts',
    schema: ListAccountsQuery,
    fields: [
      { name: 'currency', label: 'Currency' },
      { name: 'status', label: 'Status', type: 'select', options: AccountStatus.options },
      { name: 'customer_id', label: 'Customer id' },
      { name: 'label', label: 'Label' },
      ...DATE_FIELDS,
    ],
    columns: [
      { label: 'Label', cell: (a) => idLink('account', a.id, a.label) },
      { label: 'Customer', cell: (a) => ownerOf(a, a.extra) },
      { label: 'Currency', cell: (a) => a.currency },
      { label: 'Balance', cell: (a) => a.balance, numeric: true },
      { label: 'Available', cell: (a) => a.available_balance, numeric: true },
      { label: 'Status', cell: (a) => badge(a.status) },
      { label: 'Account number', cell: (a) => a.account_number },
      { label: 'Id', cell: (a) => idLink('account', a.id) },
    ],
    empty: 'No accounts in this environment match.',
    load: (scope, query) => listAccounts(deps.db, scope, query, accountOwner),
    above: (scope) => accountTotals(deps, scope),
  };
}

/** Read-only lists of customers and accounts, through each module's service (never its repo). */
export function dataRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/customers', async (request, reply) => sendPage(reply, await renderList(request, sessionOf(request), customersView(deps))));
    app.get('/accounts', async (request, reply) => sendPage(reply, await renderList(request, sessionOf(request), accountsView(deps))));
  };
}
