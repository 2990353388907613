import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { gathered, type BatchedIdempotency } from '../../http/idempotency-batch.js';
import type { KeyedBatch } from '../../db/pipeline.js';
import { notFound } from '../../core/errors.js';
import { pageSchema } from '../../db/pagination.js';
import {
  ApplicationIdParams,
  ApplicationResponse,
  BalanceResponse,
  CardIdParams,
  CardResponse,
  ClientKeyHeaders,
  CreateApplicationBody,
  CreateApplicationResponse,
  CreateCardBody,
  CreateCardResponse,
  ListApplicationsQuery,
  ListCardsQuery,
  SecretEnvelope,
  AuthorizationIdParams,
  AuthorizationResponse,
  ListAuthorizationsQuery,
  SettleAuthorizationBody,
  SimulateAuthorizationBody,
  WithdrawBody,
  WithdrawResponse,
  SimulateApplicationBody,
  SimulateFulfilmentBody,
  SpendingControlsInput,
  UpdateCardStatusBody,
  UpdatePinBody,
} from './schema.js';
import * as applications from './applications.js';
import * as payments from './payments.js';
import * as withdrawing from './withdrawals.js';
import * as service from './service.js';
import { z } from 'zod';
import { sandboxCardNetwork } from '../../rails/cards.js';

const tags = ['Cards'];
const simTags = ['Simulations'];

/** Sandbox-only routes do not exist for a live key: 404 before anything else is looked at. */
export async function sandboxOnly(req: FastifyRequest): Promise<void> {
  if (req.ctx?.environment !== 'sandbox') throw notFound('Route');
}

export function cardRoutes(deps: Deps): FastifyPluginAsyncZod {
  // Withdrawals move money: concurrent ones share one transaction (the batch path,
  // docs/money-path.md), each with its own outcome and idempotency record.
  // The cards, accounts and balance rows leave with the claim when the requests name them all.
  const withdrawals = gathered(
    deps,
    'cards.withdraw',
    'card_withdrawals',
    async (batch: KeyedBatch<withdrawing.WithdrawRequest, WithdrawResponse>) => {
      const { claimed, first } = await batch.claim(withdrawing.planWithdrawalReads(batch.trx, batch.inputs));
      batch.answer(claimed.length > 0 ? await withdrawing.withdrawCards(batch.trx, claimed, batch.writes, first) : []);
    },
    withdrawing.rowsNamed,
  );
  return async (app) => {
    const r = routes(app, tags);
    const sim = routes(app, simTags);
    applicationRoutes(r, deps);
    cardManagementRoutes(r, deps);
    cardControlRoutes(r, deps);
    cardSecretRoutes(app, deps);
    withdrawalRoutes(r, deps, withdrawals);
    networkSimulationRoutes(sim, deps);
    issuingSimulationRoutes(sim, deps);
  };
}

type Routes = ReturnType<typeof routes>;
type App = Parameters<FastifyPluginAsyncZod>[0];

/** Card applications: apply, list, get. */
function applicationRoutes(r: Routes, deps: Deps): void {
  r.post(
    '/v1/cards/applications/new',
    {
      summary: 'Create a card application',
      body: CreateApplicationBody,
      data: CreateApplicationResponse,
      errors: ['invalid_amount', 'not_found'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'cards.applications.create', (trx) => applications.createApplication(trx, req.ctx, req.body, deps)),
  );

  r.get(
    '/v1/cards/applications',
    { summary: 'List card applications', querystring: ListApplicationsQuery, data: pageSchema(ApplicationResponse), errors: [] },
    async (req) => ok(await applications.listApplications(deps.db, req.ctx, req.query)),
  );

  r.get(
    '/v1/cards/applications/:application_id',
    { summary: 'Get a card application', params: ApplicationIdParams, data: ApplicationResponse, errors: [] },
    async (req) => ok(await applications.getApplication(deps.db, req.ctx, req.params.application_id)),
  );
}

/** Cards: issue, list, get, balance. */
function cardManagementRoutes(r: Routes, deps: Deps): void {
  r.post(
    '/v1/cards',
    {
      summary: 'Create a card',
      description:
        'Virtual cards are active at once; physical cards are shipped and start `inactive` until activated. A card is in USD unless `currency` names another supported currency.',
      body: CreateCardBody,
      data: CreateCardResponse,
      errors: ['invalid_amount', 'not_found', 'invalid_state_transition', 'kyc_level_insufficient', 'feature_not_active'],
    },
    (req, reply) => deps.idempotency.run(req, reply, 'cards.create', (trx) => service.createCard(trx, req.ctx, req.body, deps)),
  );

  r.get('/v1/cards', { summary: 'List cards', querystring: ListCardsQuery, data: pageSchema(CardResponse), errors: [] }, async (req) =>
    ok(await service.listCards(deps.readDb(), req.ctx, req.query)),
  );

  r.get('/v1/cards/:card_id', { summary: 'Get a card', params: CardIdParams, data: CardResponse, errors: [] }, async (req) =>
    ok(await service.getCard(deps.db, req.ctx, req.params.card_id)),
  );

  r.get(
    '/v1/cards/:card_id/balance',
    { summary: 'Get a card balance', params: CardIdParams, data: BalanceResponse, errors: [] },
    async (req) => ok(await service.getBalance(deps.db, req.ctx, req.params.card_id)),
  );
}

/** A card's settings: update, spending controls, PIN. */
function cardControlRoutes(r: Routes, deps: Deps): void {
  r.patch(
    '/v1/cards/:card_id/update',
    {
      summary: 'Update a card status',
      description:
        '`active` (activation or unfreeze), `freeze` (reversible), `blocked`, `lost`, `stolen` (final: 409 card_blocked afterwards).',
      params: CardIdParams,
      body: UpdateCardStatusBody,
      data: CardResponse,
      errors: ['card_blocked', 'invalid_state_transition', 'invalid_amount'],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.updateStatus(trx, req.ctx, req.params.card_id, req.body))),
  );

  r.patch(
    '/v1/cards/:card_id/spending-controls',
    {
      summary: 'Update spending controls',
      description: 'Only the fields sent change; a limit of null removes it.',
      params: CardIdParams,
      body: SpendingControlsInput,
      data: CardResponse,
      errors: ['card_blocked', 'invalid_amount'],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.updateSpendingControls(trx, req.ctx, req.params.card_id, req.body))),
  );

  r.put(
    '/v1/cards/:card_id/pin',
    {
      summary: 'Update a card PIN',
      params: CardIdParams,
      body: UpdatePinBody,
      data: z.object({ message: z.string() }),
      errors: ['card_blocked'],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.updatePin(trx, req.ctx, req.params.card_id, req.body.card_pin, deps))),
  );
}

/** The card number and PIN, sealed for the client's public key. */
function cardSecretRoutes(app: App, deps: Deps): void {
  // Typed headers (X-Client-Public-Key): written out, the route helper types no headers.
  const secretSchema = (summary: string) => ({
    tags,
    summary,
    description: 'Needs `X-Client-Public-Key`: base64 of a PEM RSA public key (>= 2048 bits). See the README, "Cards", for decryption.',
    params: CardIdParams,
    headers: ClientKeyHeaders,
    response: { 200: envelope(SecretEnvelope) },
    errors: ['missing_client_public_key', 'invalid_client_public_key'] as const,
  });

  app.get('/v1/cards/:card_id/sensitive-details', { schema: secretSchema('View card sensitive details') }, async (req, reply) => {
    reply.header('Cache-Control', 'no-store');
    return ok(await service.sensitiveDetails(deps.db, req.ctx, req.params.card_id, req.headers['x-client-public-key'], deps));
  });

  app.get('/v1/cards/:card_id/pin', { schema: secretSchema('Get a card PIN') }, async (req, reply) => {
    reply.header('Cache-Control', 'no-store');
    return ok(await service.pinDetails(deps.db, req.ctx, req.params.card_id, req.headers['x-client-public-key'], deps));
  });
}

/** Withdrawals (the batch path) and authorizations. */
function withdrawalRoutes(r: Routes, deps: Deps, withdrawals: BatchedIdempotency<withdrawing.WithdrawRequest, WithdrawResponse>): void {
  r.post(
    '/v1/cards/withdraw',
    {
      summary: 'Withdraw from a card',
      description:
        "Moves money from the card's balance to `account_id` (the owner's or the business's; default: the owner's oldest active account in the card's currency).",
      body: WithdrawBody,
      data: WithdrawResponse,
      errors: ['invalid_amount', 'not_found', 'currency_mismatch', 'insufficient_funds', 'account_frozen', 'account_inactive'],
    },
    (req, reply) => withdrawals.run(req, reply, { ctx: req.ctx, body: req.body }),
  );

  r.get(
    '/v1/cards/:card_id/authorizations',
    {
      summary: "List a card's authorizations",
      params: CardIdParams,
      querystring: ListAuthorizationsQuery,
      data: pageSchema(AuthorizationResponse),
      errors: [],
    },
    async (req) => ok(await payments.listAuthorizations(deps.readDb(), req.ctx, req.params.card_id, req.query)),
  );

  r.get(
    '/v1/card-authorizations/:authorization_id',
    { summary: 'Get a card authorization', params: AuthorizationIdParams, data: AuthorizationResponse, errors: [] },
    async (req) => ok(await payments.getAuthorization(deps.db, req.ctx, req.params.authorization_id)),
  );
}

/** Sandbox: the card network authorizes, captures and reverses. */
function networkSimulationRoutes(sim: Routes, deps: Deps): void {
  sim.post(
    '/v1/simulations/cards/:card_id/authorizations',
    {
      onRequest: sandboxOnly,
      summary: 'Sandbox: a card network authorization',
      description: 'Approved (funds held on the card) or declined with a reason; `decline_reason` forces a decline.',
      params: CardIdParams,
      body: SimulateAuthorizationBody,
      data: AuthorizationResponse,
      errors: ['invalid_amount'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'simulations.cards.authorize', (trx) =>
        payments.authorize(trx, sandboxCardNetwork, deps.config.CARD_AUTH_EXPIRY_HOURS, req.ctx, req.params.card_id, req.body),
      ),
  );

  for (const action of ['capture', 'reverse'] as const) {
    sim.post(
      `/v1/simulations/card-authorizations/:authorization_id/${action}`,
      {
        onRequest: sandboxOnly,
        summary: action === 'capture' ? 'Sandbox: clear (post) an authorization, fully or partly' : 'Sandbox: release an authorization',
        params: AuthorizationIdParams,
        body: SettleAuthorizationBody,
        data: AuthorizationResponse,
        errors: ['invalid_state_transition', 'unprocessable', 'invalid_amount'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, `simulations.card_authorizations.${action}`, (trx) =>
          payments[action](trx, sandboxCardNetwork, req.ctx, req.params.authorization_id, req.body?.amount),
        ),
    );
  }
}

/** Sandbox: applications decided, cards fulfilled. */
function issuingSimulationRoutes(sim: Routes, deps: Deps): void {
  // ---------- sandbox simulations ----------
  sim.post(
    '/v1/simulations/card-applications/:application_id',
    {
      onRequest: sandboxOnly,
      summary: 'Sandbox: decide a card application',
      params: ApplicationIdParams,
      body: SimulateApplicationBody,
      data: ApplicationResponse,
      errors: ['invalid_state_transition'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'simulations.card_applications.decide', (trx) =>
        applications.simulateApplication(trx, req.ctx, req.params.application_id, req.body.status),
      ),
  );

  sim.post(
    '/v1/simulations/cards/:card_id/fulfilment',
    {
      onRequest: sandboxOnly,
      summary: 'Sandbox: ship or deliver a physical card',
      params: CardIdParams,
      body: SimulateFulfilmentBody,
      data: CardResponse,
      errors: ['invalid_state_transition'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'simulations.cards.fulfilment', (trx) =>
        service.simulateFulfilment(trx, req.ctx, req.params.card_id, req.body.status),
      ),
  );
}
