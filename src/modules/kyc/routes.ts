import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod, ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Deps } from '../../http/deps.js';
import { notFound } from '../../core/errors.js';
import { ok } from '../../http/envelope.js';
import { routes, type App } from '../../http/route.js';
import { policyFrom } from './compliance.js';
import { hostedKycRoutes, useFastJsonParser } from './hosted.js';
import {
  CustomerIdParams,
  KycDocumentsQuery,
  KycDocumentsResponse,
  KycStatusQuery,
  KycSimulationResponse,
  KycStatusResponse,
  toSimulationResponse,
  SimulateKycBody,
  StartKycBody,
  StartKycResponse,
  StartS2sBody,
  StartS2sResponse,
  UploadDocumentBody,
  UploadDocumentResponse,
} from './schema.js';
import * as service from './service.js';

const tags = ['KYC'];
/** Room for a 10 MB document in base64 (docs/api-rules.md#envelope-and-errors): this route only. */
export const KYC_UPLOAD_BODY_LIMIT = 15 * 1024 * 1024;

/** Where the hosted verification page lives: PUBLIC_BASE_URL, else the host the client called. */
export function baseUrlOf(deps: Deps, req: FastifyRequest): string {
  return deps.config.PUBLIC_BASE_URL ?? `${req.protocol}://${req.host}`;
}

export function kycRoutes(deps: Deps): FastifyPluginAsyncZod {
  const policy = policyFrom(deps.config);
  return async (app) => {
    // Read the sanctions list now: a missing or unreadable SANCTIONS_LIST_FILE stops start-up
    // instead of failing the first verification.
    policy.sanctions();
    verificationRoutes(app, deps, policy);
    reviewRoutes(app, deps);
    await app.register(uploadRoutes(deps));
    await app.register(hostedKycRoutes(deps, policy));
  };
}

/** Start a verification: on the hosted page, or server to server with uploaded documents. */
function verificationRoutes(app: App, deps: Deps, policy: ReturnType<typeof policyFrom>): void {
  const r = routes(app, tags);
  // The reference's older `/v1/risk/...` paths are aliases: same operation, same idempotency name.
  for (const url of ['/v1/customers/kyc/start', '/v1/risk/start-kyc']) {
    r.post(
      url,
      {
        summary: 'Start KYC verification (returns the hosted page web_url)',
        body: StartKycBody,
        data: StartKycResponse,
        errors: ['not_found', 'kyc_already_completed', 'invalid_state_transition'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'kyc.start', (trx) =>
          service.startKyc(trx, req.ctx, req.body, { baseUrl: baseUrlOf(deps, req), ttlMinutes: deps.config.KYC_LINK_TTL_MINUTES }),
        ),
    );
  }

  for (const url of ['/v1/customers/kyc/start-s2s', '/v1/risk/start-kyc-s2s']) {
    r.post(
      url,
      {
        summary: 'Submit uploaded documents for verification (412 missing_documents lists what is missing)',
        body: StartS2sBody,
        data: StartS2sResponse,
        errors: ['not_found', 'missing_documents', 'kyc_already_completed', 'invalid_state_transition'],
      },
      (req, reply) =>
        deps.idempotency.run(req, reply, 'kyc.start_s2s', async (trx) => {
          const submitted = await service.submitKyc(trx, req.ctx, req.body, policy);
          // risk.yaml answers `success` once the documents are accepted and the review started.
          return url === '/v1/risk/start-kyc-s2s' ? { ...submitted, status: 'success' as const } : submitted;
        }),
    );
  }
}

/** The review as it stands: documents and status; in the sandbox, a forced result. */
function reviewRoutes(app: App, deps: Deps): void {
  const r = routes(app, tags);
  r.get(
    '/v1/customers/:customer_id/kyc/documents',
    {
      summary: 'List uploaded KYC documents (metadata only)',
      params: CustomerIdParams,
      querystring: KycDocumentsQuery,
      data: KycDocumentsResponse,
      errors: [],
    },
    async (req) => ok(await service.listDocuments(deps.db, req.ctx, req.params.customer_id, req.query)),
  );

  r.get(
    '/v1/customers/:customer_id/kyc/status',
    { summary: 'Get the KYC review status', params: CustomerIdParams, querystring: KycStatusQuery, data: KycStatusResponse, errors: [] },
    async (req) => ok(await service.getKycStatus(deps.db, req.ctx, req.params.customer_id, req.query.level)),
  );

  routes(app, ['Simulations']).post(
    '/v1/simulations/kyc/:customer_id',
    {
      summary: 'Sandbox: force a KYC result',
      params: CustomerIdParams,
      body: SimulateKycBody,
      data: KycSimulationResponse,
      errors: ['invalid_state_transition'],
    },
    (req, reply) => {
      if (req.ctx.environment !== 'sandbox') throw notFound(`Route POST ${req.url}`);
      return deps.idempotency.run(req, reply, 'simulations.kyc', (trx) =>
        service.simulateKyc(trx, req.ctx, req.params.customer_id, req.body).then(toSimulationResponse),
      );
    },
  );
}

/**
 * Uploads carry no amounts: plain JSON.parse instead of the exact-number parser, which takes
 * seconds on a body of many megabytes. Content-type parsers are scoped to this nested plugin.
 */
function uploadRoutes(deps: Deps): FastifyPluginAsync {
  return async (scope) => {
    useFastJsonParser(scope);
    const uploads = routes(scope.withTypeProvider<ZodTypeProvider>(), tags);
    for (const url of ['/v1/customers/kyc/upload-document', '/v1/risk/upload-document']) {
      uploads.post(
        url,
        {
          bodyLimit: KYC_UPLOAD_BODY_LIMIT,
          summary: 'Upload a KYC document (base64 JPEG, PNG or PDF, at most 10 MB decoded)',
          body: UploadDocumentBody,
          data: UploadDocumentResponse,
          errors: ['not_found', 'kyc_already_completed'],
        },
        (req, reply) =>
          deps.idempotency.run(req, reply, 'kyc.upload_document', async (trx) => {
            const saved = await service.uploadDocument(trx, req.ctx, req.body, deps.config.KYC_DOCUMENT_MAX_BYTES);
            // risk.yaml spells the normalised document type in lower case.
            return url === '/v1/risk/upload-document' ? { ...saved, document_type: saved.document_type.toLowerCase() } : saved;
          }),
      );
    }
  };
}
