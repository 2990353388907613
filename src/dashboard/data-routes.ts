import type { FastifyInstance } from 'fastify';
import type { Deps } from '../app.js';
import { ListCustomersQuery, type CustomerResponse } from '../modules/customers/schema.js';
import { listCustomers } from '../modules/customers/service.js';
import { badge } from './layout.js';
import { renderList, unavailable } from './list-view.js';
import { sendPage, sessionOf } from './routes.js';

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
          { label: 'Name', cell: (c) => (c.type === 'business' ? c.business_name : [c.first_name, c.last_name].filter(Boolean).join(' ')) },
          { label: 'Email', cell: (c) => c.email },
          { label: 'Type', cell: (c) => c.type },
          { label: 'Status', cell: (c) => badge(c.status) },
          { label: 'KYC', cell: (c) => badge(c.kyc_status) },
          { label: 'Id', cell: (c) => c.id },
          { label: 'Created', cell: (c) => c.date_added },
        ],
        empty: 'No customers in this environment match.',
        load: (scope, query) => listCustomers(deps.db, scope, query),
      });
      return sendPage(reply, page);
    });

    for (const [section, title] of [
      ['accounts', 'Accounts'],
      ['transfers', 'Transfers'],
      ['transactions', 'Transactions'],
    ] as const) {
      app.get(`/${section}`, async (request, reply) => sendPage(reply, unavailable(sessionOf(request), section, title)));
    }
  };
}
