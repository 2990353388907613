import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import {
  AdvanceTestClockBody,
  CreateTestClockBody,
  DeletedTestClockResponse,
  ListTestClocksQuery,
  MAX_ADVANCE_DAYS,
  TestClockIdParams,
  TestClockResponse,
} from './schema.js';
import * as service from './service.js';

const BASE = '/v1/simulations/test-clocks';

type Routes = ReturnType<typeof routes>;

/** Sandbox test clocks (404 with a live key): docs/time.md. */
export function testClockRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, ['Simulations']);
    clockRoutes(r, deps);
    advanceRoute(r, deps);
    attachRoutes(r, deps);
  };
}

/** Create, list, get and delete. */
function clockRoutes(r: Routes, deps: Deps): void {
  r.post(
    BASE,
    {
      summary: 'Create a test clock (sandbox)',
      description: 'A clock frozen at `frozen_time`. Attach the sandbox business to it to move its due work with the clock.',
      body: CreateTestClockBody,
      data: TestClockResponse,
      created: true,
      errors: ['not_found'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'simulations.test_clocks.create', (trx) => service.createClock(trx, req.ctx, req.body), {
        status: 201,
      }),
  );
  r.get(
    BASE,
    {
      summary: 'List test clocks (sandbox)',
      querystring: ListTestClocksQuery,
      data: pageSchema(TestClockResponse),
      errors: ['not_found'],
    },
    async (req) => ok(await service.listClocks(deps.readDb(), req.ctx, req.query)),
  );
  r.get(
    `${BASE}/:test_clock_id`,
    { summary: 'Get a test clock (sandbox)', params: TestClockIdParams, data: TestClockResponse, errors: [] },
    async (req) => ok(await service.getClock(deps.db, req.ctx, req.params.test_clock_id)),
  );
  r.delete(
    `${BASE}/:test_clock_id`,
    {
      summary: 'Delete a test clock (sandbox)',
      description: 'Detaches the business first; 409 while the clock is advancing.',
      params: TestClockIdParams,
      data: DeletedTestClockResponse,
      errors: ['invalid_state_transition'],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.deleteClock(trx, req.ctx, req.params.test_clock_id))),
  );
}

function advanceRoute(r: Routes, deps: Deps): void {
  r.post(
    `${BASE}/:test_clock_id/advance`,
    {
      summary: 'Advance a test clock (sandbox)',
      description:
        `Answers 202 with status \`advancing\`; the clock worker then fires, in time order and at the clock's time, what falls ` +
        `due for the attached sandbox business (expiries, settlements), and sets status \`ready\` at \`frozen_time\`. ` +
        `Forward only, at most ${MAX_ADVANCE_DAYS} days per advance, one advance at a time (409 while advancing).`,
      params: TestClockIdParams,
      body: AdvanceTestClockBody,
      data: TestClockResponse,
      accepted: true,
      errors: ['invalid_state_transition'],
    },
    (req, reply) =>
      deps.idempotency.run(
        req,
        reply,
        'simulations.test_clocks.advance',
        (trx) => service.advanceClock(trx, req.ctx, req.params.test_clock_id, req.body.frozen_time),
        { status: 202 },
      ),
  );
}

function attachRoutes(r: Routes, deps: Deps): void {
  for (const action of ['attach', 'detach'] as const) {
    r.post(
      `${BASE}/:test_clock_id/${action}`,
      {
        summary: action === 'attach' ? 'Attach the sandbox business to a test clock' : 'Detach the sandbox business from a test clock',
        description:
          action === 'attach'
            ? 'From now on its collections, card authorizations, FX orders, approvals and sandbox payouts fall due only as this clock advances (409 `conflict` when another clock holds it). 409 `invalid_state_transition` while the clock is advancing.'
            : 'Its due work goes back to real time (409 while the clock is advancing).',
        params: TestClockIdParams,
        data: TestClockResponse,
        errors: action === 'attach' ? ['conflict', 'invalid_state_transition'] : ['invalid_state_transition'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, `simulations.test_clocks.${action}`, (trx) =>
          (action === 'attach' ? service.attachClock : service.detachClock)(trx, req.ctx, req.params.test_clock_id),
        ),
    );
  }
}
