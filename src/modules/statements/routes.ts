import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { AccountIdParams } from '../accounts/schema.js';
import { BalancesQuery, BalancesResponse } from './schema.js';
import * as service from './service.js';

const tags = ['Accounts'];

export function statementRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, tags);
    r.get(
      '/v1/accounts/:account_id/balances',
      {
        summary: 'Balances as of an instant, or over a period',
        description:
          "With `as_of` (RFC 3339, default now): `balance` and `available_balance` as they stood at that instant, read from the balance each ledger entry carries (one index seek, whatever the account's history). With `from`/`to` instead: opening and closing balances and the period's credit and debit totals. Works on customer and business accounts alike.",
        params: AccountIdParams,
        querystring: BalancesQuery,
        data: BalancesResponse,
        errors: [],
      },
      async (req) => ok(await service.balances(deps.db, req.ctx, req.params.account_id, req.query)),
    );
  };
}
