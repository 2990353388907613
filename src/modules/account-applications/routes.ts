import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { ok } from '../../http/envelope.js';
import { routes, type App } from '../../http/route.js';
import { pageSchema } from '../../db/pagination.js';
import {
  ApplicationIdParams,
  ApplicationResponse,
  CreateApplicationBody,
  DeleteResponse,
  HistoryResponse,
  ListApplicationsQuery,
  PendingResponse,
  ProcessingResult,
  SubmitAndProcessResponse,
  TosBody,
  UpdateApplicationBody,
  ValidateApplicationBody,
  ValidateResponse,
} from './schema.js';
import * as service from './service.js';

const base = '/v1/accounts/applications';
const tags = ['Account applications'];

export function accountApplicationRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    draftRoutes(app, deps);
    applicationRoutes(app, deps);
    decisionRoutes(app, deps);
  };
}

/** Drafts: create, list, validate, and accept the terms. */
function draftRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.post(
    base,
    {
      summary: 'Create an account application (draft)',
      body: CreateApplicationBody,
      data: ApplicationResponse,
      errors: ['not_found'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'accounts.applications.create', (trx) => service.createApplication(trx, req.ctx, req.body)),
  );
  r.get(
    base,
    { summary: 'List account applications', querystring: ListApplicationsQuery, data: pageSchema(ApplicationResponse), errors: [] },
    async (req) => ok(await service.listApplications(deps.db, req.ctx, req.query)),
  );
  r.get(
    `${base}/pending`,
    { summary: 'Applications waiting for a decision (first 100)', data: PendingResponse, errors: [] },
    async (req) => {
      const page = await service.listApplications(deps.db, req.ctx, { page: 1, items_per_page: 100 }, [
        'submitted',
        'processing',
        'manual_review',
      ]);
      return ok({ applications: page.items, count: page.total_items ?? page.items.length });
    },
  );
  r.post(
    `${base}/validate`,
    { summary: 'Validate application data (nothing is stored)', body: ValidateApplicationBody, data: ValidateResponse, errors: [] },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'accounts.applications.validate', async () => {
        const issues = service.validateData(req.body.application_type, req.body.data, undefined, deps.config);
        return { valid: issues.length === 0, validation_errors: issues };
      }),
  );
  r.post(
    `${base}/tos`,
    {
      summary: 'Record terms-of-service acceptance',
      body: TosBody,
      data: ApplicationResponse,
      errors: ['not_found', 'invalid_state_transition'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'accounts.applications.tos', (trx) =>
        service.acceptTos(trx, req.ctx, req.body.application_id, req.body.agreement_id),
      ),
  );
}

/** One application: read, edit, delete. */
function applicationRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.get(`${base}/:id`, { summary: 'Get an application', params: ApplicationIdParams, data: ApplicationResponse, errors: [] }, async (req) =>
    ok(await service.getApplication(deps.db, req.ctx, req.params.id)),
  );
  r.put(
    `${base}/:id`,
    {
      summary: 'Update a draft application',
      params: ApplicationIdParams,
      body: UpdateApplicationBody,
      data: ApplicationResponse,
      errors: ['invalid_state_transition'],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.updateApplication(trx, req.ctx, req.params.id, req.body.data))),
  );
  r.delete(
    `${base}/:id`,
    {
      summary: 'Delete a draft or rejected application',
      params: ApplicationIdParams,
      data: DeleteResponse,
      errors: ['invalid_state_transition'],
    },
    async (req) => ok(await deps.inTransaction((trx) => service.deleteApplication(trx, req.ctx, req.params.id))),
  );
}

/** Submit and process an application, and read its history. */
function decisionRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.post(
    `${base}/:id/submit`,
    {
      summary: 'Submit a draft application',
      params: ApplicationIdParams,
      data: ApplicationResponse,
      errors: ['invalid_state_transition'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'accounts.applications.submit', (trx) =>
        service.submitApplication(trx, req.ctx, req.params.id, deps.config),
      ),
  );
  r.post(
    `${base}/:id/process`,
    {
      summary: 'Process a submitted application',
      params: ApplicationIdParams,
      data: ProcessingResult,
      errors: ['invalid_state_transition', 'feature_not_active'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'accounts.applications.process', (trx) =>
        service.processApplication(trx, req.ctx, req.params.id, deps.config),
      ),
  );
  r.post(
    `${base}/:id/submit-and-process`,
    {
      summary: 'Submit and process in one call',
      params: ApplicationIdParams,
      data: SubmitAndProcessResponse,
      errors: ['invalid_state_transition', 'feature_not_active'],
    },
    (req, reply) =>
      deps.idempotency.run(req, reply, 'accounts.applications.submit_and_process', (trx) =>
        service.submitAndProcess(trx, req.ctx, req.params.id, deps.config),
      ),
  );
  r.get(
    `${base}/:id/history`,
    { summary: 'Application history', params: ApplicationIdParams, data: HistoryResponse, errors: [] },
    async (req) => ok(await service.history(deps.db, req.ctx, req.params.id)),
  );
}
