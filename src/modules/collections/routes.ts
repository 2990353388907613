import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import { gathered, type BatchedIdempotency } from '../../http/idempotency-batch.js';
import type { KeyedBatch } from '../../db/pipeline.js';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import * as cards from './cards.js';
import {
  ChargeCardBody,
  ChargeCardResponse,
  CollectionIdParams,
  CollectionResponse,
  CreateCollectionBody,
  CreatePaymentIntentBody,
  ListCollectionsQuery,
  ListSavedCardsQuery,
  PaymentIntentResponse,
  SavedCardParams,
  SavedCardResponse,
} from './schema.js';
import { collectionRowsNamed } from './lifecycle.js';
import * as service from './service.js';

const tags = ['Collections'];

/** The origin payment links point at: the configured public URL, else the request's own. */
export function collectionDeps(deps: Deps, req: FastifyRequest): service.CollectionDeps {
  return {
    config: deps.config,
    sealer: deps.sealer,
    baseUrl: (deps.config.PUBLIC_BASE_URL ?? `${req.protocol}://${req.host}`).replace(/\/$/, ''),
  };
}

export function collectionRoutes(deps: Deps): FastifyPluginAsyncZod {
  // Charges settle money: concurrent ones share one transaction, each with its own outcome.
  // The intents and saved cards leave with the claim (docs/money-path.md).
  const charges = gathered(
    deps,
    'collections.payment_intents.charge',
    'collections',
    async (batch: KeyedBatch<cards.ChargeRequest, cards.ChargeResponse>) => {
      const { claimed, first } = await batch.claim(cards.planChargeReads(batch.trx, batch.inputs));
      batch.answer(claimed.length > 0 ? await cards.chargeCards(batch.trx, claimed, batch.writes, first) : []);
    },
    (req) => collectionRowsNamed(req.ctx, req.body.payment_intent_id),
  );
  return async (app) => {
    const r = routes(app, tags);
    collectionCrudRoutes(r, deps);
    paymentIntentRoutes(r, deps, charges);
    savedCardRoutes(r, deps);
  };
}

type Routes = ReturnType<typeof routes>;

/** Collections: initiate, list, get. */
function collectionCrudRoutes(r: Routes, deps: Deps): void {
  r.post(
    '/v1/collections',
    {
      summary: 'Initiate a collection',
      description:
        'Card: a `payment_link` to the hosted checkout page. Bank transfer: `instruction` and `bank_transfer` (account number and ' +
        'the reference to quote). Mobile money: `instruction` (the payer approves a prompt). Statuses pending, completed, failed, ' +
        'expired (`detailed_status` is finer); completion settles the amount less the fee into the destination account.',
      body: CreateCollectionBody,
      data: CollectionResponse,
      errors: ['not_found', 'invalid_amount', 'currency_mismatch', 'account_inactive'],
    },
    // sensitive: the stored response holds the checkout session token (sealed at rest).
    (req, reply) =>
      deps.idempotency.run(
        req,
        reply,
        'collections.create',
        (trx) => service.createCollection(trx, req.ctx, collectionDeps(deps, req), req.body),
        { sensitive: true },
      ),
  );

  r.get(
    '/v1/collections',
    {
      summary: 'List collections',
      querystring: ListCollectionsQuery,
      data: pageSchema(CollectionResponse),
      errors: [],
    },
    async (req) => ok(await service.listCollections(deps.db, req.ctx, collectionDeps(deps, req), req.query)),
  );

  r.get(
    '/v1/collections/:id',
    {
      summary: 'Get a collection',
      description: "Needs an API key (unlike the reference); another business's collection is 404.",
      params: CollectionIdParams,
      data: CollectionResponse,
      errors: [],
    },
    async (req) => ok(await service.getCollection(deps.db, req.ctx, collectionDeps(deps, req), req.params.id)),
  );
}

/** Card payment intents and their charge (the batch path). */
function paymentIntentRoutes(r: Routes, deps: Deps, charges: BatchedIdempotency<cards.ChargeRequest, cards.ChargeResponse>): void {
  r.post(
    '/v1/collections/cards/payment-intents',
    {
      summary: 'Create a card payment intent',
      description: 'With `card_token` the saved card is charged at once.',
      body: CreatePaymentIntentBody,
      data: PaymentIntentResponse,
      errors: ['not_found', 'invalid_amount', 'currency_mismatch', 'account_inactive'],
    },
    (req, reply) =>
      deps.idempotency.run(
        req,
        reply,
        'collections.payment_intents.create',
        (trx) => cards.createPaymentIntent(trx, req.ctx, collectionDeps(deps, req), req.body),
        {
          sensitive: true,
        },
      ),
  );

  r.post(
    '/v1/collections/cards/payment-intents/charge',
    {
      summary: 'Charge a saved card',
      description: 'A decline answers 200 with status `failed` and the failure code.',
      body: ChargeCardBody,
      data: ChargeCardResponse,
      errors: ['not_found', 'invalid_state_transition'],
    },
    (req, reply) => charges.run(req, reply, { ctx: req.ctx, d: collectionDeps(deps, req), body: req.body }),
  );
}

/** Saved cards: list, get, delete. */
function savedCardRoutes(r: Routes, deps: Deps): void {
  r.get(
    '/v1/collections/cards',
    {
      summary: 'List saved cards',
      description:
        "An array, as the reference answers; pages with page/items_per_page or cursor, the next page's cursor in the X-Next-Cursor header.",
      querystring: ListSavedCardsQuery,
      data: z.array(SavedCardResponse),
      errors: [],
    },
    async (req, reply) => {
      const page = await cards.listSavedCards(deps.db, req.ctx, req.query);
      if (page.next_cursor) void reply.header('x-next-cursor', page.next_cursor);
      return ok(page.items);
    },
  );

  r.get(
    '/v1/collections/cards/:card_id',
    { summary: 'Get a saved card', params: SavedCardParams, data: SavedCardResponse, errors: [] },
    async (req) => ok(await cards.getSavedCard(deps.db, req.ctx, req.params.card_id)),
  );

  r.delete(
    '/v1/collections/cards/:card_id',
    {
      summary: 'Delete a saved card',
      params: SavedCardParams,
      data: z.object({ success: z.boolean(), message: z.string() }),
      errors: [],
    },
    async (req) => ok(await deps.inTransaction((trx) => cards.deleteSavedCard(trx, req.ctx, req.params.card_id))),
  );
}
