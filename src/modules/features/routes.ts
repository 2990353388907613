import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
import { ActivateBody, ActivateResponse, EligibilityBody, EligibilityResponse, FeatureListResponse, ListFeaturesQuery } from './schema.js';
import * as service from './service.js';

const tags = ['Features'];

export function featureRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/risk/features',
      {
        schema: {
          tags,
          summary: 'List features, their requirements and (with customer_id) activation',
          querystring: ListFeaturesQuery,
          response: { 200: envelope(FeatureListResponse) },
        },
      },
      async (req) => ok(await service.listFeatures(deps.db, req.ctx, deps.config, req.query)),
    );

    app.post(
      '/v1/risk/features/eligibility',
      {
        schema: {
          tags,
          summary: 'Check feature eligibility (each pending requirement says how to meet it)',
          body: EligibilityBody,
          response: { 200: envelope(EligibilityResponse) },
        },
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'features.eligibility', (trx) => service.checkEligibility(trx, req.ctx, deps.config, req.body)),
    );

    app.post(
      '/v1/risk/features/activate',
      { schema: { tags, summary: 'Activate a feature for a customer', body: ActivateBody, response: { 200: envelope(ActivateResponse) } } },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'features.activate', (trx) => service.activateFeature(trx, req.ctx, deps.config, req.body)),
    );
  };
}
