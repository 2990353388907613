import type { FastifyInstance } from 'fastify';
import type { Deps } from '../http/deps.js';
import { ListCustomersQuery, type CustomerResponse } from '../modules/customers/schema.js';
import { listCustomers } from '../modules/customers/service.js';
import { customerKycView } from '../modules/kyc/service.js';
import { AccountStatus, ListAccountsQuery, type AccountResponse } from '../modules/accounts/schema.js';
import { listAccounts } from '../modules/accounts/service.js';
import {
  ListTransactionsQuery,
  TRANSACTION_STATUSES,
  TRANSACTION_TYPES,
  type TransactionResponse,
} from '../modules/transactions/schema.js';
import { listTransactions } from '../modules/transactions/service.js';
import { ListTransfersQuery, TRANSFER_STATUSES, type TransferResponse } from '../modules/transfers/schema.js';
import { listTransfers } from '../modules/transfers/service.js';
import { isUuid } from '../lib/ids.js';
import { badge, idCell, idLink, when } from './layout.js';
import { renderList } from './list-view.js';
import { sendPage, sessionOf } from './replies.js';

const DATE_FIELDS = [
  { name: 'from', label: 'From', type: 'date' },
  { name: 'to', label: 'To', type: 'date' },
] as const;

/** Read-only views of the business's data, through each module's service (never its repo). */
export function dataRoutes(deps: Deps) {
  return async function plugin(app: FastifyInstance) {
    app.get('/customers', async (request, reply) => {
      const session = sessionOf(request);
      const page = await renderList<ListCustomersQuery, CustomerResponse>(request, session, {
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
          {
            label: 'Name',
            cell: (c) =>
              idLink(
                'customer',
                c.id,
                (c.type === 'business' ? c.business_name : [c.first_name, c.last_name].filter(Boolean).join(' ')) || c.id,
              ),
          },
          { label: 'Email', cell: (c) => c.email },
          { label: 'Type', cell: (c) => c.type },
          { label: 'Status', cell: (c) => badge(c.status) },
          { label: 'KYC', cell: (c) => badge(c.kyc_status) },
          { label: 'Id', cell: (c) => idLink('customer', c.id) },
          { label: 'Created', cell: (c) => when(c.date_added) },
        ],
        empty: 'No customers in this environment match.',
        load: (scope, query) => listCustomers(deps.db, scope, query, customerKycView),
      });
      return sendPage(reply, page);
    });

    app.get('/accounts', async (request, reply) =>
      sendPage(
        reply,
        await renderList<ListAccountsQuery, AccountResponse>(request, sessionOf(request), {
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
            { label: 'Currency', cell: (a) => a.currency },
            { label: 'Balance', cell: (a) => a.balance, numeric: true },
            { label: 'Available', cell: (a) => a.available_balance, numeric: true },
            { label: 'Status', cell: (a) => badge(a.status) },
            { label: 'Account number', cell: (a) => a.account_number },
            { label: 'Customer', cell: (a) => idLink('customer', a.customer_id) },
            { label: 'Id', cell: (a) => idLink('account', a.id) },
          ],
          empty: 'No accounts in this environment match.',
          load: (scope, query) => listAccounts(deps.db, scope, query),
        }),
      ),
    );

    app.get('/transfers', async (request, reply) =>
      sendPage(
        reply,
        await renderList<ListTransfersQuery, TransferResponse>(request, sessionOf(request), {
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
            { label: 'Transfer', cell: (x) => idLink('transfer', x.id, x.reference ?? x.id) },
            { label: 'Amount', cell: (x) => `${x.amount} ${x.currency}`, numeric: true },
            { label: 'Fee', cell: (x) => x.fee, numeric: true },
            { label: 'Status', cell: (x) => badge(x.transfer_status) },
            { label: 'From', cell: (x) => idLink('account', x.source.id) },
            {
              label: 'To',
              cell: (x) =>
                x.destination.destination_type === 'external_account'
                  ? idCell(x.destination.id)
                  : idLink(x.destination.destination_type === 'card' ? 'card' : 'account', x.destination.id),
            },
            { label: 'Created', cell: (x) => when(x.date_created) },
          ],
          empty: 'No transfers in this environment match.',
          load: (scope, query) => listTransfers(deps.db, scope, query),
        }),
      ),
    );

    app.get('/transactions', async (request, reply) =>
      sendPage(
        reply,
        await renderList<ListTransactionsQuery, TransactionResponse>(request, sessionOf(request), {
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
            { label: 'Date', cell: (x) => when(x.date_created) },
            { label: 'Description', cell: (x) => x.description },
            { label: 'Type', cell: (x) => x.transaction_type },
            { label: 'Direction', cell: (x) => x.direction },
            { label: 'Amount', cell: (x) => `${x.direction === 'out' ? '−' : ''}${x.amount} ${x.currency}`, numeric: true },
            { label: 'Balance after', cell: (x) => x.balance_after, numeric: true },
            { label: 'Status', cell: (x) => badge(x.status) },
            { label: 'Account', cell: (x) => idLink('account', x.account_id) },
            {
              label: 'Reference',
              cell: (x) => (x.reference && isUuid(x.reference) ? idLink('transfer', x.reference) : idCell(x.reference)),
            },
          ],
          empty: 'No transactions in this environment match.',
          load: (scope, query) => listTransactions(deps.db, scope, query),
        }),
      ),
    );
  };
}
