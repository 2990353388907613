import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes, type App } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import { listInstitutions } from '../../lib/institutions.js';
import {
  CreateExternalAccountBody,
  ExternalAccountIdParams,
  ExternalAccountResponse,
  InstitutionItem,
  InstitutionsQuery,
  ListExternalAccountsQuery,
  VerifyExternalAccountBody,
  VerifyExternalAccountResponse,
} from './schema.js';
import * as service from './service.js';

const tags = ['External accounts'];

export function externalAccountRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    payeeRoutes(app, deps);
    lookupRoutes(app, deps);
    oneAccountRoutes(app, deps);
  };
}

/** Payees: add and list. */
function payeeRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.post(
    '/v1/external-accounts',
    {
      summary: 'Add an external account',
      description:
        'Answers 202 with status `pending`; verification with the institution runs in the background and ends in ' +
        '`active` or `failed` (`payee.setup.*` events). A duplicate (same customer, type, currency and account) returns the existing payee.',
      body: CreateExternalAccountBody,
      data: ExternalAccountResponse,
      accepted: true,
      errors: ['not_found'],
    },
    (req, reply) =>
      deps.idempotency.run(
        req,
        reply,
        'external_accounts.create',
        (trx) => service.createExternalAccount(trx, req.ctx, req.body, deps.config),
        {
          status: (data) => (data.status === 'pending' ? 202 : 200),
        },
      ),
  );

  r.get(
    '/v1/external-accounts',
    { summary: 'List external accounts', querystring: ListExternalAccountsQuery, data: pageSchema(ExternalAccountResponse), errors: [] },
    async (req) => ok(await service.listExternalAccounts(deps.readDb(), req.ctx, req.query)),
  );
}

/** Look-ups that store nothing: the institutions, and a name enquiry. */
function lookupRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.get(
    '/v1/external-accounts/institutions',
    {
      config: { publicKeyAllowed: true },
      summary: 'List payee institutions',
      description: 'Banks and mobile money operators per country; min_amount/max_amount are decimal strings in the institution currency.',
      querystring: InstitutionsQuery,
      data: pageSchema(InstitutionItem),
      errors: [],
    },
    async (req) => {
      const q = req.query;
      const all = listInstitutions({ country: q.country_iso_code, type: q.institution_type }).filter(
        (i) => !q.currency || i.currency === q.currency,
      );
      const start = (q.page - 1) * q.items_per_page;
      const items = all.slice(start, start + q.items_per_page).map(service.toInstitutionItem);
      return ok({
        items,
        page: q.page,
        items_per_page: q.items_per_page,
        total_items: all.length,
        total_pages: Math.ceil(all.length / q.items_per_page),
        next_cursor: null,
      });
    },
  );

  r.post(
    '/v1/external-accounts/verify',
    {
      summary: 'Verify an external account (name enquiry)',
      body: VerifyExternalAccountBody,
      data: VerifyExternalAccountResponse,
      errors: [],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'external_accounts.verify', () => service.verifyAccountDetails(req.ctx, req.body, deps.config)),
  );
}

/** One external account: read, delete. */
function oneAccountRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.get(
    '/v1/external-accounts/:external_account_id',
    { summary: 'Get an external account', params: ExternalAccountIdParams, data: ExternalAccountResponse, errors: [] },
    async (req) => ok(await service.getExternalAccount(deps.db, req.ctx, req.params.external_account_id)),
  );

  r.delete(
    '/v1/external-accounts/:external_account_id',
    {
      summary: 'Delete an external account',
      description: 'New transfers to it are refused; transfers already under way finish.',
      params: ExternalAccountIdParams,
      data: z.object({ id: z.string(), deleted: z.boolean(), message: z.string() }),
      errors: [],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.deleteExternalAccount(trx, req.ctx, req.params.external_account_id))),
  );
}
