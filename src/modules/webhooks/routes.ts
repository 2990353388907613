import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
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
  HistoryQuery,
  IdParams,
  ListEndpointsQuery,
  ResendResponse,
  RotateSecretBody,
  UpdateEndpointBody,
} from './schema.js';
import * as service from './service.js';

const tags = ['Webhooks'];

export function webhookRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    app.post(
      '/v1/webhooks/endpoints',
      {
        schema: {
          tags,
          summary: 'Register a webhook endpoint',
          description: 'Answers 201 with the signing secret, shown in full only here and on rotation.',
          body: CreateEndpointBody,
          response: { 201: envelope(EndpointWithSecretResponse) },
        },
      },
      (req, reply) =>
        deps.idempotency.run(
          req,
          reply,
          'webhooks.endpoints.create',
          (trx) => service.createEndpoint(trx, req.ctx, deps.sealer, req.body),
          { status: 201, sensitive: true },
        ),
    );

    app.get(
      '/v1/webhooks/endpoints',
      {
        schema: {
          tags,
          summary: 'List webhook endpoints',
          querystring: ListEndpointsQuery,
          response: { 200: envelope(pageSchema(EndpointResponse)) },
        },
      },
      async (req) => ok(await service.listEndpoints(deps.db, req.ctx, req.query)),
    );

    app.get(
      '/v1/webhooks/endpoints/:id',
      { schema: { tags, summary: 'Get a webhook endpoint', params: IdParams, response: { 200: envelope(EndpointResponse) } } },
      async (req) => ok(await service.getEndpoint(deps.db, req.ctx, req.params.id)),
    );

    app.patch(
      '/v1/webhooks/endpoints/:id',
      {
        schema: {
          tags,
          summary: 'Update a webhook endpoint',
          description: 'Change url, event_types (empty or null = all) or status (enabled/disabled).',
          params: IdParams,
          body: UpdateEndpointBody,
          response: { 200: envelope(EndpointResponse) },
        },
      },
      async (req) => ok(await deps.inTransaction((trx) => service.updateEndpoint(trx, req.ctx, req.params.id, req.body))),
    );

    app.delete(
      '/v1/webhooks/endpoints/:id',
      { schema: { tags, summary: 'Delete a webhook endpoint', params: IdParams, response: { 200: envelope(DeletedResponse) } } },
      async (req) => ok(await deps.inTransaction((trx) => service.deleteEndpoint(trx, req.ctx, req.params.id))),
    );

    app.post(
      '/v1/webhooks/endpoints/:id/rotate-secret',
      {
        schema: {
          tags,
          summary: 'Rotate the signing secret',
          description: 'The old secret keeps signing beside the new one for expire_old_in_seconds (default 86400, 0 = at once).',
          params: IdParams,
          body: RotateSecretBody.nullish(),
          response: { 200: envelope(EndpointWithSecretResponse) },
        },
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

    app.get(
      '/v1/webhooks/endpoints/:id/attempts',
      {
        schema: {
          tags,
          summary: 'Delivery attempts made to an endpoint',
          params: IdParams,
          querystring: AttemptsQuery,
          response: { 200: envelope(pageSchema(AttemptResponse)) },
        },
      },
      async (req) => ok(await service.listEndpointAttempts(deps.db, req.ctx, req.params.id, req.query)),
    );

    app.get(
      '/v1/webhooks/history',
      {
        schema: {
          tags,
          summary: 'Webhook event history (one row per event and endpoint)',
          querystring: HistoryQuery,
          response: { 200: envelope(pageSchema(DeliverySummary)) },
        },
      },
      async (req) => ok(await service.listDeliveries(deps.db, req.ctx, req.query)),
    );

    app.get(
      '/v1/webhooks/event/:id',
      { schema: { tags, summary: 'Webhook event detail', params: IdParams, response: { 200: envelope(DeliveryDetail) } } },
      async (req) => ok(await service.getDelivery(deps.db, req.ctx, req.params.id)),
    );

    app.get(
      '/v1/webhooks/calls/:id',
      {
        schema: {
          tags,
          summary: 'Call history (every attempt) of a webhook event',
          params: IdParams,
          querystring: AttemptsQuery,
          response: { 200: envelope(pageSchema(AttemptResponse)) },
        },
      },
      async (req) => ok(await service.listAttempts(deps.db, req.ctx, req.params.id, req.query)),
    );

    app.post(
      '/v1/webhooks/event/send/:id',
      {
        schema: {
          tags,
          summary: 'Resend a webhook event',
          description: 'Queues an immediate delivery attempt; its outcome appears in the call history.',
          params: IdParams,
          response: { 200: envelope(ResendResponse) },
        },
      },
      (req, reply) => deps.idempotency.run(req, reply, 'webhooks.event.send', (trx) => service.resend(trx, req.ctx, req.params.id)),
    );
  };
}
