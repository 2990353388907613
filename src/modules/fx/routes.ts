import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema, PageQuery } from '../../db/pagination.js';
import { gathered, type BatchedIdempotency } from '../../http/idempotency-batch.js';
import type { KeyedBatch } from '../../db/pipeline.js';
import { orderBatch, planFirstLocks, rowsNamed, takesBatchPath, type OrderRequest } from './batch.js';
import * as orders from './orders.js';
import {
  CreateOrderBody,
  ListOrdersQuery,
  OrderIdParams,
  OrderResponse,
  PairRate,
  QuoteBody,
  QuoteResponse,
  RatesQuery,
  SimulatedRate,
  SimulateRateBody,
  SupportedCurrenciesQuery,
  SupportedCurrency,
} from './schema.js';
import * as service from './service.js';

const tags = ['FX'];
/** Reference data a public key may read (docs/api-rules.md#keys-and-environments). */
const publicRead = { publicKeyAllowed: true };

export function fxRoutes(deps: Deps): FastifyPluginAsyncZod {
  // Market orders into an account take the batch path, as transfers do (docs/money-path.md):
  // concurrent orders share one transaction, each with its own idempotency record and outcome.
  // The same operation name as the lone path, so a key means the same request on either.
  // The claim, with the first reads and locks when known ahead (docs/money-path.md), the orders, the answers.
  const batched = gathered(
    deps,
    'fx.orders.create',
    'fx_orders',
    async (batch: KeyedBatch<OrderRequest, OrderResponse>) => {
      const { claimed, first } = await batch.claim(planFirstLocks(batch.trx, batch.inputs));
      batch.answer(claimed.length > 0 ? await orderBatch(batch.trx, claimed, batch.writes, first) : []);
    },
    rowsNamed,
  );
  return async (app) => {
    const r = routes(app, tags);
    const sim = routes(app, ['Simulations']);
    rateRoutes(r, deps);
    orderRoutes(r, deps, batched);
    orderReadRoutes(r, deps);
    fxSimulationRoutes(sim, deps);
  };
}

type Routes = ReturnType<typeof routes>;

/** Currency pairs, rates and quotes. */
function rateRoutes(r: Routes, deps: Deps): void {
  r.get(
    '/v1/fx/supported-currencies',
    {
      config: publicRead,
      summary: 'List currency pairs',
      querystring: SupportedCurrenciesQuery,
      data: z.array(SupportedCurrency),
      errors: [],
    },
    async () => ok(service.listSupportedPairs(deps.config)),
  );

  r.get(
    '/v1/fx/rates',
    {
      config: publicRead,
      summary: 'List exchange rates',
      description:
        'Per pair a SELL rate (bid: to_currency received per from_currency sold) and a BUY rate (ask: paid per unit bought), spread included.',
      querystring: RatesQuery,
      data: z.array(PairRate),
      errors: [],
    },
    async (req) => ok(await service.listRates(deps.db, req.ctx, req.query, deps.config)),
  );

  r.post(
    '/v1/fx/quote',
    { summary: 'Create an FX quote', body: QuoteBody, data: QuoteResponse, errors: ['invalid_amount'] },
    (req, reply) => deps.idempotency.run(req, reply, 'fx.quote.create', (trx) => service.createQuote(trx, req.ctx, req.body, deps.config)),
  );
}

/** Creating an order (the batch path for market orders). */
function orderRoutes(r: Routes, deps: Deps, batched: BatchedIdempotency<OrderRequest, OrderResponse>): void {
  r.post(
    '/v1/fx/orders',
    {
      summary: 'Create an order',
      description:
        'Market orders (and orders with a quote_id) execute at once; limit orders hold the funds and wait as pending for target_rate. With approvals on, every order first waits in waiting_approval (funds held) until approved in the dashboard.',
      body: CreateOrderBody,
      data: OrderResponse,
      errors: [
        'not_found',
        'invalid_amount',
        'currency_mismatch',
        'insufficient_funds',
        'limit_exceeded',
        'account_frozen',
        'account_inactive',
        'quote_expired',
        'quote_used',
        'unprocessable',
      ],
    },
    (req, reply) =>
      takesBatchPath(req.ctx, req.body)
        ? batched.run(req, reply, { ctx: req.ctx, config: deps.config, body: req.body })
        : deps.idempotency.run(req, reply, 'fx.orders.create', (trx) => orders.createOrder(trx, req.ctx, req.body, deps.config)),
  );
}

/** Orders: list, pending approvals, get, cancel. */
function orderReadRoutes(r: Routes, deps: Deps): void {
  r.get(
    '/v1/fx/orders',
    { summary: 'List orders', querystring: ListOrdersQuery, data: pageSchema(OrderResponse), errors: [] },
    async (req) => ok(await orders.listOrders(deps.readDb(), req.ctx, req.query)),
  );

  // With approvals on (business setting `approvals.fx_orders`), orders wait here for an owner or
  // admin to approve or reject them in the dashboard (the reference makes approvals dashboard-only).
  r.get(
    '/v1/fx/orders/pending-approvals',
    {
      summary: 'List pending approvals',
      description: 'Orders in waiting_approval, newest first. They are approved or rejected in the dashboard (Approvals).',
      querystring: PageQuery.pick({ page: true, items_per_page: true }).strict(),
      data: pageSchema(OrderResponse),
      errors: [],
    },
    async (req) => ok(await orders.listOrders(deps.readDb(), req.ctx, { ...req.query, status: 'waiting_approval' })),
  );

  r.get('/v1/fx/orders/:order_id', { summary: 'Get an order', params: OrderIdParams, data: OrderResponse, errors: [] }, async (req) =>
    ok(await orders.getOrder(deps.db, req.ctx, req.params.order_id)),
  );

  r.post(
    '/v1/fx/orders/:order_id/cancel',
    {
      summary: 'Cancel an order',
      description: 'Only a pending (limit) order can be cancelled; its hold is released.',
      params: OrderIdParams,
      body: z.strictObject({}).nullish(),
      data: OrderResponse,
      errors: ['invalid_state_transition'],
    },
    (req, reply) => deps.idempotency.run(req, reply, 'fx.orders.cancel', (trx) => orders.cancelOrder(trx, req.ctx, req.params.order_id)),
  );
}

/** Sandbox: a rate of its own. */
function fxSimulationRoutes(sim: Routes, deps: Deps): void {
  sim.post(
    '/v1/simulations/fx/rates',
    {
      summary: 'Set the sandbox market rate',
      body: SimulateRateBody,
      data: SimulatedRate,
      errors: ['not_found'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'simulations.fx.rates', (trx) => service.simulateRate(trx, req.ctx, req.body, deps.config)),
  );
}
