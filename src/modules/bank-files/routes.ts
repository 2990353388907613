import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { validationError } from '../../core/errors.js';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { operatorGuard } from '../../http/operator-auth.js';
import { routes } from '../../http/route.js';
import { UuidParam } from '../../lib/validators.js';
import { ExceptionAssignInput, ExceptionReturnInput } from './schema.js';
import * as service from './service.js';

/**
 * The operator API of the bank file exchange (/operator/v1/bank/...), behind the operator token
 * (http/operator-auth.ts). Not part of the business API: it is hidden from /v1/openapi.json.
 */
function parse<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value ?? {});
  if (!result.success) {
    throw validationError(result.error.issues.map((i) => ({ field: i.path.join('.') || 'body', code: 'invalid', message: i.message })));
  }
  return result.data;
}

const Id = z.strictObject({ id: z.string() });
const ListQuery = z.object({ connection_id: z.string().optional(), status: z.enum(['open', 'assigned', 'returned']).optional() });
const ImportBody = z.strictObject({ filename: z.string().min(1).max(255), content: z.string().min(1) });

export function bankFileRoutes(deps: Deps, bank: service.BankDeps): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const guard = operatorGuard(deps.config.OPERATOR_API_TOKEN);
    const options = { onRequest: guard, schema: { hide: true } };
    const base = '/operator/v1/bank';
    const unit = deps.inTransaction.bind(deps);

    app.get(`${base}/connections`, options, async () => ok(await service.listConnections(deps.db)));
    app.post(`${base}/connections`, options, async (req, reply) =>
      reply.code(201).send(ok(await unit((trx) => service.addConnection(trx, req.body)))),
    );
    app.get(`${base}/connections/:id`, options, async (req) => ok(await service.getConnection(deps.db, parse(Id, req.params).id)));
    for (const [action, status] of [
      ['disable', 'disabled'],
      ['enable', 'active'],
    ] as const) {
      app.post(`${base}/connections/:id/${action}`, options, async (req) =>
        ok(await unit((trx) => service.setConnectionStatus(trx, parse(Id, req.params).id, status))),
      );
    }
    app.post(`${base}/connections/:id/exchange`, options, async (req) =>
      ok(await service.exchange(unit, deps.db, parse(Id, req.params).id, bank)),
    );
    app.post(`${base}/connections/:id/files`, options, async (req) => {
      const { id } = parse(Id, req.params);
      const body = parse(ImportBody, req.body);
      return ok(await unit((trx) => service.importFile(trx, id, body.filename, body.content, bank)));
    });
    app.get(`${base}/files`, options, async (req) => ok(await service.listFiles(deps.db, parse(ListQuery, req.query).connection_id)));
    app.get(`${base}/files/:id`, options, async (req) => ok(await service.getFile(deps.db, parse(Id, req.params).id)));
    app.get(`${base}/exceptions`, options, async (req) => {
      const q = parse(ListQuery, req.query);
      return ok(await service.listExceptions(deps.db, { connectionId: q.connection_id, status: q.status }));
    });
    app.post(`${base}/exceptions/:id/assign`, options, async (req) => {
      const { id } = parse(Id, req.params);
      const body = parse(ExceptionAssignInput, req.body);
      return ok(await unit((trx) => service.assignException(trx, id, body.account_id, body.note ?? null, bank)));
    });
    app.post(`${base}/exceptions/:id/return`, options, async (req) => {
      const { id } = parse(Id, req.params);
      const body = parse(ExceptionReturnInput, req.body);
      return ok(await unit((trx) => service.returnException(trx, id, body.note ?? null)));
    });
    app.get(`${base}/reconciliations`, options, async (req) =>
      ok(await service.listReconciliations(deps.db, parse(ListQuery, req.query).connection_id)),
    );
  };
}

const SimulateCreditBody = z
  .strictObject({
    amount: z.union([z.string(), z.number()]),
    payer_name: z.string().trim().min(1).max(140).optional(),
    reference: z.string().trim().min(1).max(140).optional(),
  })
  .meta({ id: 'SimulateBankCreditRequest' });

const SimulatedCreditResponse = z
  .object({
    entry_reference: z.string(),
    outcome: z.string(),
    account_id: z.string(),
    amount: z.string(),
    currency: z.string(),
    payer_name: z.string().nullable(),
    reference: z.string().nullable(),
  })
  .meta({ id: 'SimulatedBankCredit' });

/** Sandbox: a bank transfer arrives, notified in a camt.054 and imported like a live bank's (404 with a live key). */
export function bankSimulationRoutes(deps: Deps, bank: service.BankDeps): FastifyPluginAsyncZod {
  return async (app) => {
    const r = routes(app, ['Simulations']);
    r.post(
      '/v1/simulations/accounts/:account_id/bank-credits',
      {
        summary: 'Simulate: an inbound bank transfer through the bank file importer (sandbox)',
        description:
          'The sandbox bank notifies a credit to the account (camt.054) and the same importer as live books it: the account is credited ' +
          'from the payer, and a pending bank-transfer collection whose reference the payment quotes completes. Sandbox keys only.',
        params: z.strictObject({ account_id: UuidParam }),
        body: SimulateCreditBody,
        data: SimulatedCreditResponse,
        errors: ['invalid_amount', 'account_inactive', 'unprocessable'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'simulations.accounts.bank_credits', (trx) =>
          service.simulateInboundCredit(trx, req.ctx, req.params.account_id, req.body, deps.config.DATA_DIR, bank),
        ),
    );
  };
}
