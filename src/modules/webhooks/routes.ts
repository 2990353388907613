import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes, type App } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import {
  AttemptResponse,
  AttemptsQuery,
  CreateEndpointBody,
  DeletedResponse,
  DeliveryDetail,
  DeliverySummary,
  EndpointResponse,
  EndpointWithSecretResponse,
  EventResponse,
  ListEventsQuery,
  ReplayBody,
  ReplayResponse,
  HistoryQuery,
  IdParams,
  ListEndpointsQuery,
  ResendResponse,
  RotateSecretBody,
  UpdateEndpointBody,
} from './schema.js';
import * as service from './service.js';
import { webhookLoopbackAllowed } from '../../config.js';

const tags = ['Webhooks'];

export function webhookRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    endpointRoutes(app, deps);
    endpointSecretRoutes(app, deps);
    deliveryRoutes(app, deps);
    eventRoutes(app, deps);
  };
}

/** Endpoints: register, list, read, update, delete. */
function endpointRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  const urlRules = { allowLoopback: webhookLoopbackAllowed(deps.config) };
  r.post(
    '/v1/webhooks/endpoints',
    {
      summary: 'Register a webhook endpoint',
      description: 'Answers 201 with the signing secret, shown in full only here and on rotation.',
      body: CreateEndpointBody,
      data: EndpointWithSecretResponse,
      created: true,
      errors: ['limit_exceeded'],
    },
    (req, reply) =>
      deps.idempotency.run(
        req,
        reply,
        'webhooks.endpoints.create',
        (trx) => service.createEndpoint(trx, req.ctx, deps.sealer, req.body, urlRules),
        { status: 201, sensitive: true },
      ),
  );

  r.get(
    '/v1/webhooks/endpoints',
    {
      summary: 'List webhook endpoints',
      querystring: ListEndpointsQuery,
      data: pageSchema(EndpointResponse),
      errors: [],
    },
    async (req) => ok(await service.listEndpoints(deps.db, req.ctx, req.query)),
  );

  r.get(
    '/v1/webhooks/endpoints/:id',
    { summary: 'Get a webhook endpoint', params: IdParams, data: EndpointResponse, errors: [] },
    async (req) => ok(await service.getEndpoint(deps.db, req.ctx, req.params.id)),
  );

  r.patch(
    '/v1/webhooks/endpoints/:id',
    {
      summary: 'Update a webhook endpoint',
      description: 'Change url, event_types (empty or null = all) or status (enabled/disabled).',
      params: IdParams,
      body: UpdateEndpointBody,
      data: EndpointResponse,
      errors: [],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.updateEndpoint(trx, req.ctx, req.params.id, req.body, urlRules))),
  );

  r.delete(
    '/v1/webhooks/endpoints/:id',
    { summary: 'Delete a webhook endpoint', params: IdParams, data: DeletedResponse, errors: [] },
    async (req) => ok(await deps.inTransaction((trx) => service.deleteEndpoint(trx, req.ctx, req.params.id))),
  );
}

/** An endpoint's signing secret rotated, and the attempts made to it. */
function endpointSecretRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.post(
    '/v1/webhooks/endpoints/:id/rotate-secret',
    {
      summary: 'Rotate the signing secret',
      description: 'The old secret keeps signing beside the new one for expire_old_in_seconds (default 86400, 0 = at once).',
      params: IdParams,
      body: RotateSecretBody.nullish(),
      data: EndpointWithSecretResponse,
      errors: [],
    },
    (req, reply) =>
      deps.idempotency.run(
        req,
        reply,
        'webhooks.endpoints.rotate_secret',
        (trx) => service.rotateSecret(trx, req.ctx, deps.sealer, req.params.id, req.body ?? {}),
        { sensitive: true },
      ),
  );

  r.get(
    '/v1/webhooks/endpoints/:id/attempts',
    {
      summary: 'Delivery attempts made to an endpoint',
      params: IdParams,
      querystring: AttemptsQuery,
      data: pageSchema(AttemptResponse),
      errors: [],
    },
    async (req) => ok(await service.listEndpointAttempts(deps.readDb(), req.ctx, req.params.id, req.query)),
  );
}

/** Deliveries: the history, one event's detail and calls, resend and replay. */
function deliveryRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.get(
    '/v1/webhooks/history',
    {
      summary: 'Webhook event history (one row per event and endpoint)',
      querystring: HistoryQuery,
      data: pageSchema(DeliverySummary),
      errors: [],
    },
    async (req) => ok(await service.listDeliveries(deps.readDb(), req.ctx, req.query)),
  );

  r.get('/v1/webhooks/event/:id', { summary: 'Webhook event detail', params: IdParams, data: DeliveryDetail, errors: [] }, async (req) =>
    ok(await service.getDelivery(deps.db, req.ctx, req.params.id)),
  );

  r.get(
    '/v1/webhooks/calls/:id',
    {
      summary: 'Call history (every attempt) of a webhook event',
      params: IdParams,
      querystring: AttemptsQuery,
      data: pageSchema(AttemptResponse),
      errors: [],
    },
    async (req) => ok(await service.listAttempts(deps.readDb(), req.ctx, req.params.id, req.query)),
  );

  r.post(
    '/v1/webhooks/event/send/:id',
    {
      summary: 'Resend a webhook event',
      description: 'Queues an immediate delivery attempt; its outcome appears in the call history.',
      params: IdParams,
      data: ResendResponse,
      errors: ['invalid_state_transition'],
    },
    (req, reply) => deps.idempotency.run(req, reply, 'webhooks.event.send', (trx) => service.resend(trx, req.ctx, req.params.id)),
  );

  r.post(
    '/v1/webhooks/endpoints/:id/replay',
    {
      summary: "Replay an endpoint's events over a time range",
      description:
        'Queues one more attempt of each delivery that failed (scope `failed`, the default) or of every event of the range ' +
        'the endpoint subscribes to (scope `all`, also events it never got), at most 14 days and 10,000 events. A delivery ' +
        'still waiting or in flight is not queued again, so replaying twice never sends an event twice at once.',
      params: IdParams,
      body: ReplayBody,
      data: ReplayResponse,
      errors: ['invalid_state_transition', 'limit_exceeded'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'webhooks.endpoints.replay', (trx) => service.replay(trx, req.ctx, req.params.id, req.body)),
  );
}

/** Events, readable without webhooks. */
function eventRoutes(app: App, deps: Deps): void {
  const events = routes(app, ['Events']);
  events.get(
    '/v1/events',
    {
      summary: 'List events',
      description:
        'What the webhooks carried, readable without them: cursor pages newest first (`order=asc`: oldest first), filtered by ' +
        '`event_type`, time range (`from`/`to`) and `resource_id` (the event_group_id). Each event carries its `sequence` ' +
        '(per business and environment, increasing in commit order) once given, a moment after its commit.',
      querystring: ListEventsQuery,
      data: pageSchema(EventResponse),
      errors: [],
    },
    async (req) => ok(await service.listApiEvents(deps.readDb(), req.ctx, req.query)),
  );

  events.get('/v1/events/:id', { summary: 'Get an event', params: IdParams, data: EventResponse, errors: [] }, async (req) =>
    ok(await service.getApiEvent(deps.db, req.ctx, req.params.id)),
  );
}
