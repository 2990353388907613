import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { envelope, ok } from '../../http/envelope.js';
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

const tags = ['Account applications'];
const base = '/v1/accounts/applications';

export function accountApplicationRoutes(deps: Deps): FastifyPluginAsyncZod {
  return async (app) => {
    const { idempotency, db, config } = deps;
    app.post(
      base,
      {
        schema: {
          tags,
          summary: 'Create an account application (draft)',
          body: CreateApplicationBody,
          response: { 200: envelope(ApplicationResponse) },
        },
      },
      (req, reply) =>
        idempotency.run(req, reply, 'accounts.applications.create', (trx) => service.createApplication(trx, req.ctx, req.body)),
    );
    app.get(
      base,
      {
        schema: {
          tags,
          summary: 'List account applications',
          querystring: ListApplicationsQuery,
          response: { 200: envelope(pageSchema(ApplicationResponse)) },
        },
      },
      async (req) => ok(await service.listApplications(db, req.ctx, req.query)),
    );
    app.get(
      `${base}/pending`,
      { schema: { tags, summary: 'Applications waiting for a decision (first 100)', response: { 200: envelope(PendingResponse) } } },
      async (req) => {
        const page = await service.listApplications(db, req.ctx, { page: 1, items_per_page: 100 }, [
          'submitted',
          'processing',
          'manual_review',
        ]);
        return ok({ applications: page.items, count: page.total_items ?? page.items.length });
      },
    );
    app.post(
      `${base}/validate`,
      {
        schema: {
          tags,
          summary: 'Validate application data (nothing is stored)',
          body: ValidateApplicationBody,
          response: { 200: envelope(ValidateResponse) },
        },
      },
      (req, reply) =>
        idempotency.run(req, reply, 'accounts.applications.validate', async () => {
          const issues = service.validateData(config, req.body.application_type, req.body.data);
          return { valid: issues.length === 0, validation_errors: issues };
        }),
    );
    app.post(
      `${base}/tos`,
      { schema: { tags, summary: 'Record terms-of-service acceptance', body: TosBody, response: { 200: envelope(ApplicationResponse) } } },
      (req, reply) =>
        idempotency.run(req, reply, 'accounts.applications.tos', (trx) =>
          service.acceptTos(trx, req.ctx, req.body.application_id, req.body.agreement_id),
        ),
    );
    app.get(
      `${base}/:id`,
      { schema: { tags, summary: 'Get an application', params: ApplicationIdParams, response: { 200: envelope(ApplicationResponse) } } },
      async (req) => ok(await service.getApplication(db, req.ctx, req.params.id)),
    );
    app.put(
      `${base}/:id`,
      {
        schema: {
          tags,
          summary: 'Update a draft application',
          params: ApplicationIdParams,
          body: UpdateApplicationBody,
          response: { 200: envelope(ApplicationResponse) },
        },
      },
      async (req) => ok(await deps.inTransaction((trx) => service.updateApplication(trx, req.ctx, req.params.id, req.body.data))),
    );
    app.delete(
      `${base}/:id`,
      {
        schema: {
          tags,
          summary: 'Delete a draft or rejected application',
          params: ApplicationIdParams,
          response: { 200: envelope(DeleteResponse) },
        },
      },
      async (req) => ok(await deps.inTransaction((trx) => service.deleteApplication(trx, req.ctx, req.params.id))),
    );
    app.post(
      `${base}/:id/submit`,
      {
        schema: {
          tags,
          summary: 'Submit a draft application',
          params: ApplicationIdParams,
          response: { 200: envelope(ApplicationResponse) },
        },
      },
      (req, reply) =>
        idempotency.run(req, reply, 'accounts.applications.submit', (trx) =>
          service.submitApplication(trx, req.ctx, config, req.params.id),
        ),
    );
    app.post(
      `${base}/:id/process`,
      {
        schema: {
          tags,
          summary: 'Process a submitted application',
          params: ApplicationIdParams,
          response: { 200: envelope(ProcessingResult) },
        },
      },
      (req, reply) =>
        idempotency.run(req, reply, 'accounts.applications.process', (trx) =>
          service.processApplication(trx, req.ctx, config, req.params.id),
        ),
    );
    app.post(
      `${base}/:id/submit-and-process`,
      {
        schema: {
          tags,
          summary: 'Submit and process in one call',
          params: ApplicationIdParams,
          response: { 200: envelope(SubmitAndProcessResponse) },
        },
      },
      (req, reply) =>
        idempotency.run(req, reply, 'accounts.applications.submit_and_process', (trx) =>
          service.submitAndProcess(trx, req.ctx, config, req.params.id),
        ),
    );
    app.get(
      `${base}/:id/history`,
      { schema: { tags, summary: 'Application history', params: ApplicationIdParams, response: { 200: envelope(HistoryResponse) } } },
      async (req) => ok(await service.history(db, req.ctx, req.params.id)),
    );
  };
}
