import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { routes } from '../../http/route.js';
import { notFound } from '../../core/errors.js';
import { UuidParam } from '../../lib/validators.js';
import { forceRailOutcome, type RailOutcome } from './payout-lifecycle.js';
import { TransferResponse } from './schema.js';

const ReasonBody = z.strictObject({ reason: z.string().trim().min(1).max(500).optional() }).meta({ id: 'SimulationReason' });

const ACTIONS: [string, RailOutcome, string][] = [
  ['complete', 'settled', 'The rail settles the payout: held funds are posted (transfer.status.completed).'],
  ['fail', 'failed', 'The rail rejects the payout: held funds are released (transfer.status.failed).'],
  ['return', 'returned', 'The receiving bank returns the payout: released if not yet settled, else reversed (transfer.status.returned).'],
];

/** Sandbox: push a payout through its rail by hand (404 with a live key). */
export function payoutSimulationRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, ['Simulations']);
    for (const [action, outcome, description] of ACTIONS) {
      r.post(
        `/v1/simulations/transfers/:transfer_id/${action}`,
        {
          summary: `Simulate: payout ${action} (sandbox)`,
          description,
          params: z.strictObject({ transfer_id: UuidParam }),
          // An empty POST (no body at all) means no reason.
          body: z.preprocess((v) => v ?? {}, ReasonBody),
          data: TransferResponse,
          errors: ['invalid_state_transition'],
        },
        (req, reply) =>
          deps.idempotency.run(req, reply, `simulations.transfers.${action}`, (trx) => {
            if (req.ctx.environment !== 'sandbox') throw notFound('Route');
            return forceRailOutcome(trx, req.ctx, req.params.transfer_id, outcome, req.body.reason ?? null, deps.config);
          }),
      );
    }
  };
}
