import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import { pgliteTimestampText, postgresTimestampText } from '../../db/timestamp-text.js';
import { AccountIdParams, AccountResponse, CreateAccountBody, ListAccountsQuery, UpdateAccountStatusBody } from './schema.js';
import * as service from './service.js';

const tags = ['Accounts'];

export function accountRoutes(deps: Deps): FastifyPluginAsyncZod {
  // Reads lock nothing, so their lanes only bound the pool connections they hold at once.
  const readAccount = service.accountReader(deps.db, {
    lanes: deps.dbKind === 'postgres' ? 4 : 1,
    maxBatch: 100,
    timestampText: deps.dbKind === 'postgres' ? postgresTimestampText : pgliteTimestampText,
  });
  return async (app) => {
    const r = routes(app, tags);
    r.post(
      '/v1/accounts',
      {
        summary: 'Create an account',
        description: 'Without customer_id the account belongs to the business itself (fees are credited there).',
        body: CreateAccountBody,
        data: AccountResponse,
        errors: ['not_found', 'feature_not_active'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'accounts.create', (trx) => service.createAccount(trx, req.ctx, req.body, deps.config)),
    );

    r.get(
      '/v1/accounts',
      {
        summary: 'List accounts',
        querystring: ListAccountsQuery,
        data: pageSchema(AccountResponse),
        errors: [],
      },
      async (req) => ok(await service.listAccounts(deps.db, req.ctx, req.query)),
    );

    r.get(
      '/v1/accounts/:account_id',
      {
        summary: 'Get an account',
        params: AccountIdParams,
        data: AccountResponse,
        errors: [],
      },
      (req) => readAccount(req.ctx, req.params.account_id).then(ok),
    );

    r.patch(
      '/v1/accounts/:account_id/status',
      {
        summary: 'Update account status',
        description:
          '`frozen` refuses debits (409 account_frozen), `active` reactivates, `deleted` closes an account at zero balance for good.',
        params: AccountIdParams,
        body: UpdateAccountStatusBody,
        data: AccountResponse,
        errors: ['invalid_state_transition'],
      },
      async (req) => ok(await deps.inTransaction((trx) => service.updateStatus(trx, req.ctx, req.params.account_id, req.body.status))),
    );
  };
}
