import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
import { pageSchema } from '../../db/pagination.js';
import { AccountIdParams, AccountResponse, CreateAccountBody, ListAccountsQuery, UpdateAccountStatusBody } from './schema.js';
import * as service from './service.js';

const tags = ['Accounts'];

export function accountRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/accounts',
      {
        schema: {
          tags,
          summary: 'Create an account',
          description: 'Without customer_id the account belongs to the business itself (fees are credited there).',
          body: CreateAccountBody,
          response: { 200: envelope(AccountResponse) },
          errors: ['not_found', 'feature_not_active'],
        },
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'accounts.create', (trx) => service.createAccount(trx, req.ctx, deps.config, req.body)),
    );

    app.get(
      '/v1/accounts',
      {
        schema: {
          tags,
          summary: 'List accounts',
          querystring: ListAccountsQuery,
          response: { 200: envelope(pageSchema(AccountResponse)) },
          errors: [],
        },
      },
      async (req) => ok(await service.listAccounts(deps.db, req.ctx, req.query)),
    );

    app.get(
      '/v1/accounts/:account_id',
      { schema: { tags, summary: 'Get an account', params: AccountIdParams, response: { 200: envelope(AccountResponse) }, errors: [] } },
      async (req) => ok(await service.getAccount(deps.db, req.ctx, req.params.account_id)),
    );

    app.patch(
      '/v1/accounts/:account_id/status',
      {
        schema: {
          tags,
          summary: 'Update account status',
          description:
            '`frozen` refuses debits (409 account_frozen), `active` reactivates, `deleted` closes an account at zero balance for good.',
          params: AccountIdParams,
          body: UpdateAccountStatusBody,
          response: { 200: envelope(AccountResponse) },
          errors: ['invalid_state_transition'],
        },
      },
      async (req) => ok(await deps.inTransaction((trx) => service.updateStatus(trx, req.ctx, req.params.account_id, req.body.status))),
    );
  };
}
