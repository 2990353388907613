import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import type { Trx } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { routes } from '../../http/route.js';
import { notFound } from '../../core/errors.js';
import { newId } from '../../lib/ids.js';
import { parseAmount } from '../../lib/money.js';
import { UuidParam } from '../../lib/validators.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import { lockInboundCollection, settleInboundTransfer } from './lifecycle.js';
import type { CollectionDeps } from './service.js';
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
  // A pending collection this payment names is locked before anything else (lifecycle.ts).
  const collection = body.reference && collections ? await lockInboundCollection(trx, ctx, accountId, body.reference) : undefined;
  const account = (await accounts.lockForMovement(trx, ctx, [accountId])).get(accountId);
  if (!account) throw notFound('Account');
  const amount = parseAmount(body.amount, account.currency);
  accounts.assertCanCredit(account, 'account_id');
  const settlement = await ledger.systemAccount(trx, ctx, 'settlement', account.currency);
  const reference = newId();
  const posting = await ledger.post(trx, ctx, {
    kind: 'funding',
    reference,
    metadata: { simulated: true, client_reference: body.reference ?? null },
    legs: [
      { accountId: settlement, amount: -amount, currency: account.currency },
      { accountId: account.id, amount, currency: account.currency },
    ],
  });
  const [row] = await transactions.recordMovement(trx, ctx, {
    reference,
    clientReference: body.reference ?? null,
    posting,
    sides: [
      {
        accountId: account.id,
        customerId: account.customer_id,
        direction: 'in',
        amount,
        currency: account.currency,
        channel: 'bank_transfer',
        transactionType: 'account_funding',
        description: body.description ?? 'Inbound bank transfer (sandbox)',
        receivingAccountId: account.id,
      },
    ],
  });
  // An inbound payment quoting a pending bank-transfer collection's reference completes it.
  if (collection && collections) {
    await settleInboundTransfer(trx, ctx, collections, collection, { amount, transactionId: row!.id, ledgerTransactionId: posting.id });
  }
  return transactions.toTransactionResponse(row!);
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
