import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import type { Trx } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { routes } from '../../http/route.js';
import { notFound } from '../../core/errors.js';
import { parseAmount } from '../../lib/money.js';
import { UuidParam } from '../../lib/validators.js';
import type { CollectionDeps } from './service.js';
import { creditInbound } from './inbound.js';
import { collectionDeps } from './routes.js';
import { TransactionResponse } from '../transactions/schema.js';
import * as transactions from '../transactions/service.js';

const FundBody = z
  .strictObject({
    amount: z.union([z.string(), z.number()]),
    reference: z.string().trim().min(1).max(255).optional(),
    description: z.string().max(500).optional(),
  })
  .meta({ id: 'SimulateFundingRequest' });
type FundBody = z.infer<typeof FundBody>;

/** Sandbox: an inbound bank transfer credits the account, from the settlement system account. */
export async function fundAccount(trx: Trx, ctx: RequestContext, accountId: string, body: FundBody, collections?: CollectionDeps) {
  if (ctx.environment !== 'sandbox') throw notFound('Route');
  const row = await creditInbound(
    trx,
    ctx,
    accountId,
    {
      amount: (currency) => parseAmount(body.amount, currency),
      reference: body.reference ?? null,
      description: body.description ?? 'Inbound bank transfer (sandbox)',
      metadata: { simulated: true },
    },
    collections,
  );
  return transactions.toTransactionResponse(row);
}

export function fundAccountRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, ['Simulations']);
    r.post(
      '/v1/simulations/accounts/:account_id/fund',
      {
        summary: 'Fund an account (sandbox)',
        description: 'Simulates an inbound bank transfer into the account. Sandbox keys only (404 with a live key).',
        params: z.strictObject({ account_id: UuidParam }),
        body: FundBody,
        data: TransactionResponse,
        errors: ['invalid_amount', 'account_inactive'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'simulations.accounts.fund', (trx) =>
          fundAccount(trx, req.ctx, req.params.account_id, req.body, collectionDeps(deps, req)),
        ),
    );
  };
}
