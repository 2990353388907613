import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { ActivateBody, ActivateResponse, EligibilityBody, EligibilityResponse, FeatureListResponse, ListFeaturesQuery } from './schema.js';
import * as service from './service.js';

export function featureRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, ['Features']);
    r.get(
      '/v1/risk/features',
      {
        summary: 'List features, their requirements and (with customer_id) activation',
        querystring: ListFeaturesQuery,
        data: FeatureListResponse,
        errors: ['not_found'],
      },
      async (req) => ok(await service.listFeatures(deps.db, req.ctx, req.query, deps.config)),
    );

    r.post(
      '/v1/risk/features/eligibility',
      {
        summary: 'Check feature eligibility (each pending requirement says how to meet it)',
        body: EligibilityBody,
        data: EligibilityResponse,
        errors: ['not_found'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'features.eligibility', (trx) => service.checkEligibility(trx, req.ctx, req.body, deps.config)),
    );

    r.post(
      '/v1/risk/features/activate',
      {
        summary: 'Activate a feature for a customer',
        body: ActivateBody,
        data: ActivateResponse,
        errors: ['not_found', 'kyc_level_insufficient'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'features.activate', (trx) => service.activateFeature(trx, req.ctx, req.body, deps.config)),
    );
  };
}
