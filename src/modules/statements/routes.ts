import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { AccountIdParams } from '../accounts/schema.js';
import { BalancesQuery, BalancesResponse, StatementQuery } from './schema.js';
import * as service from './service.js';

const tags = ['Accounts'];

/** The format an Accept header asks for: PDF or CSV when named, JSON otherwise. */
function negotiated(accept: string | undefined): 'json' | 'csv' | 'pdf' {
  const wanted = (accept ?? '').toLowerCase();
  if (wanted.includes('application/pdf')) return 'pdf';
  if (wanted.includes('text/csv')) return 'csv';
  return 'json';
}

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

    app.get(
      '/v1/accounts/:account_id/statements',
      {
        schema: {
          tags,
          summary: 'Account statement (JSON, CSV or PDF)',
          description:
            'The movements of a period (`month=YYYY-MM`, or `from`/`to`; default the current month up to now), oldest first, each with the running balance, between the opening and closing balances, with the credit and debit totals. JSON in the envelope (default), CSV (`Accept: text/csv` or `format=csv`) or a PDF document (`Accept: application/pdf` or `format=pdf`), streamed as an attachment.',
          params: AccountIdParams,
          querystring: StatementQuery,
          errors: [],
        },
      },
      async (req, reply) => {
        const format = req.query.format ?? negotiated(req.headers.accept);
        const file = await service.statementFile(deps.db, req.ctx, req.params.account_id, req.query, format);
        if (format !== 'json') reply.header('Content-Disposition', `attachment; filename="${file.name}"`);
        return reply.type(file.contentType).send(file.body);
      },
    );
  };
}
