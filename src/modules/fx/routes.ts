import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
import { pageSchema, PageQuery } from '../../db/pagination.js';
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
/** Reference data a public key may read (contract section 2). */
const publicRead = { publicKeyAllowed: true };

export function fxRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/fx/supported-currencies',
      {
        config: publicRead,
        schema: {
          tags,
          summary: 'List currency pairs',
          querystring: SupportedCurrenciesQuery,
          response: { 200: envelope(z.array(SupportedCurrency)) },
        },
      },
      async () => ok(service.listSupportedPairs(deps.config)),
    );

    app.get(
      '/v1/fx/rates',
      {
        config: publicRead,
        schema: {
          tags,
          summary: 'List exchange rates',
          description:
            'Per pair a SELL rate (bid: to_currency received per from_currency sold) and a BUY rate (ask: paid per unit bought), spread included.',
          querystring: RatesQuery,
          response: { 200: envelope(z.array(PairRate)) },
        },
      },
      async (req) => ok(await service.listRates(deps.db, req.ctx, deps.config, req.query)),
    );

    app.post(
      '/v1/fx/quote',
      { schema: { tags, summary: 'Create an FX quote', body: QuoteBody, response: { 200: envelope(QuoteResponse) } } },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'fx.quote.create', (trx) => service.createQuote(trx, req.ctx, deps.config, req.body)),
    );

    app.post(
      '/v1/fx/orders',
      {
        schema: {
          tags,
          summary: 'Create an order',
          description:
            'Market orders (and orders with a quote_id) execute at once; limit orders hold the funds and wait as pending for target_rate. With approvals on, every order first waits in waiting_approval (funds held) until approved in the dashboard.',
          body: CreateOrderBody,
          response: { 200: envelope(OrderResponse) },
        },
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'fx.orders.create', (trx) => orders.createOrder(trx, req.ctx, deps.config, req.body)),
    );

    app.get(
      '/v1/fx/orders',
      { schema: { tags, summary: 'List orders', querystring: ListOrdersQuery, response: { 200: envelope(pageSchema(OrderResponse)) } } },
      async (req) => ok(await orders.listOrders(deps.db, req.ctx, req.query)),
    );

    // With approvals on (business setting `approvals.fx_orders`), orders wait here for an owner or
    // admin to approve or reject them in the dashboard (the reference makes approvals dashboard-only).
    app.get(
      '/v1/fx/orders/pending-approvals',
      {
        schema: {
          tags,
          summary: 'List pending approvals',
          description: 'Orders in waiting_approval, newest first. They are approved or rejected in the dashboard (Approvals).',
          querystring: PageQuery.pick({ page: true, items_per_page: true }).strict(),
          response: { 200: envelope(pageSchema(OrderResponse)) },
        },
      },
      async (req) => ok(await orders.listOrders(deps.db, req.ctx, { ...req.query, status: 'waiting_approval' })),
    );

    app.get(
      '/v1/fx/orders/:order_id',
      { schema: { tags, summary: 'Get an order', params: OrderIdParams, response: { 200: envelope(OrderResponse) } } },
      async (req) => ok(await orders.getOrder(deps.db, req.ctx, req.params.order_id)),
    );

    app.post(
      '/v1/fx/orders/:order_id/cancel',
      {
        schema: {
          tags,
          summary: 'Cancel an order',
          description: 'Only a pending (limit) order can be cancelled; its hold is released.',
          params: OrderIdParams,
          body: z.strictObject({}).nullish(),
          response: { 200: envelope(OrderResponse) },
        },
      },
      (req, reply) => deps.idempotency.run(req, reply, 'fx.orders.cancel', (trx) => orders.cancelOrder(trx, req.ctx, req.params.order_id)),
    );

    app.post(
      '/v1/simulations/fx/rates',
      {
        schema: {
          tags: ['Simulations'],
          summary: 'Set the sandbox market rate',
          body: SimulateRateBody,
          response: { 200: envelope(SimulatedRate) },
        },
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'simulations.fx.rates', (trx) => service.simulateRate(trx, req.ctx, deps.config, req.body)),
    );
  };
}
