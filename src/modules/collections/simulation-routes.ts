import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { routes } from '../../http/route.js';
import { UuidParam } from '../../lib/validators.js';
import { simulateCardToken } from './cards.js';
import {
  collectionRowsNamed,
  planSimulationLocks,
  simulateCollections,
  type SimulationAction,
  type SimulationRequest,
} from './lifecycle.js';
import type { KeyedBatch } from '../../db/pipeline.js';
import { gathered } from '../../http/idempotency-batch.js';
import { collectionDeps } from './routes.js';
import { CardTokenBody, CollectionResponse, SavedCardResponse, SimulationReasonBody } from './schema.js';

const ACTIONS = [
  ['complete', 'The payer pays: the amount less the fee settles into the destination account (collection.status.completed).'],
  ['fail', 'The payer declines or the payment fails (collection.status.failed).'],
  ['expire', 'The payer never pays (collection.status.expired).'],
] as const;

/** The gatherer of one simulation action: the claim with the collections' lock, the simulations, the answers. */
function simulationGatherer(deps: Deps, action: SimulationAction) {
  return gathered(
    deps,
    `simulations.collections.${action}`,
    'collections',
    async (batch: KeyedBatch<SimulationRequest, CollectionResponse>) => {
      const { claimed, first } = await batch.claim(planSimulationLocks(batch.trx, batch.inputs));
      batch.answer(claimed.length > 0 ? await simulateCollections(batch.trx, claimed, batch.writes, first) : []);
    },
    (req) => collectionRowsNamed(req.ctx, req.id),
  );
}

/** Sandbox-only collection simulations (404 with a live key). */
export function collectionSimulationRoutes(deps: Deps): FastifyPluginAsyncZod {
  // Each simulation settles (or ends) a collection: gathered like charges, the collections' lock
  // sent with the claim for a batch of one business (planSimulationLocks).
  const simulations = Object.fromEntries(ACTIONS.map(([action]) => [action, simulationGatherer(deps, action)])) as Record<
    SimulationAction,
    ReturnType<typeof simulationGatherer>
  >;
  return async (app) => {
    const r = routes(app, ['Simulations']);
    for (const [action, description] of ACTIONS) {
      r.post(
        `/v1/simulations/collections/:collection_id/${action}`,
        {
          summary: `Simulate: collection ${action} (sandbox)`,
          description,
          params: z.strictObject({ collection_id: UuidParam }),
          body: z.preprocess((v) => v ?? {}, SimulationReasonBody),
          data: CollectionResponse,
          errors: ['invalid_state_transition'],
        },
        (req, reply) =>
          simulations[action].run(req, reply, {
            ctx: req.ctx,
            d: collectionDeps(deps, req),
            id: req.params.collection_id,
            action,
            reason: req.body.reason ?? null,
          }),
      );
    }

    r.post(
      '/v1/simulations/card-tokens',
      {
        summary: 'Simulate: tokenize a card (sandbox)',
        description: 'Saves a card and returns its card_token, so tests can charge the magic card numbers without the checkout page.',
        body: CardTokenBody,
        data: SavedCardResponse,
        errors: ['not_found'],
      },
      (req, reply) =>
        // The card_token charges the card: sealed at rest like every secret answer.
        deps.idempotency.run(
          req,
          reply,
          'simulations.card_tokens.create',
          (trx) => simulateCardToken(trx, req.ctx, deps.sealer, req.body),
          {
            sensitive: true,
          },
        ),
    );
  };
}
