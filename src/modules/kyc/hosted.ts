import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Deps } from '../../http/deps.js';
import { AppError, notFound } from '../../core/errors.js';
import { ok } from '../../http/envelope.js';
import type { KycPolicy } from './compliance.js';
import { associatedPersonsCount, renderVerifyPage } from './page.js';
import * as repo from './repo.js';
import { DocumentMetadata } from './schema.js';
import * as service from './service.js';

/**
 * The hosted verification page behind `web_url`: the customer uploads documents in a browser.
 * The link's token is the only credential: 43 base62 characters (256 bits), stored as a hash,
 * valid for KYC_LINK_TTL_MINUTES and for its own customer and level only. Not under /v1 (no API
 * key); requests are JSON, so a cross-site form cannot post here without a CORS preflight.
 * No Idempotency-Key here (a browser page): a repeated upload stores another copy, which the
 * review ignores, and a repeated submit meets the case already under review (409).
 */
const TokenParams = z.strictObject({ token: z.string().max(100) });
const HostedUploadBody = z.strictObject({
  metadata: DocumentMetadata,
  content: z.string().min(1),
  filename: z
    .string()
    .trim()
    .min(1)
    .max(255)
    .regex(/\.(jpe?g|png|pdf)$/i, 'Extension must be .jpg, .jpeg, .png or .pdf'),
});

const SECURITY_HEADERS = {
  'Cache-Control': 'no-store',
  // The token is in the URL: never send it on as a Referer.
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
};

/** JSON bodies parsed with JSON.parse, for routes whose bodies hold no money amounts. */
export function useFastJsonParser(app: FastifyInstance) {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new AppError('invalid_json'), undefined);
    }
  });
}

export function hostedKycRoutes(deps: Deps, policy: KycPolicy): FastifyPluginAsyncZod {
  const opened = async (token: string) => {
    const found = await service.caseForToken(deps.db, token);
    if (!found) throw notFound('Verification link (unknown or expired)');
    return { found, ctx: { tenantId: found.tenant_id, environment: found.environment as 'sandbox' | 'live' } };
  };

  return async (app) => {
    useFastJsonParser(app);
    app.addHook('onSend', async (_req, reply) => {
      reply.headers(SECURITY_HEADERS);
    });

    app.get('/kyc/verify/:token', { schema: { hide: true, params: TokenParams } }, async (req, reply) => {
      const nonce = randomBytes(16).toString('base64');
      reply
        .type('text/html; charset=utf-8')
        .header(
          'Content-Security-Policy',
          `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'`,
        );
      const found = await service.caseForToken(deps.db, req.params.token);
      if (!found) return reply.code(404).send(renderVerifyPage({ nonce, state: 'expired' }));
      const ctx = { tenantId: found.tenant_id, environment: found.environment as 'sandbox' | 'live' };
      const customer = await service.customerForCase(deps.db, ctx, found.customer_id);
      const docs = await repo.documentTypesOf(deps.db, ctx, found.customer_id);
      return renderVerifyPage({
        nonce,
        state: found.status,
        level: found.level,
        customerType: customer.type,
        uploaded: docs.map((d) => d.doc_type),
        persons: await associatedPersonsCount(deps.db, customer),
      });
    });

    app.post(
      '/kyc/verify/:token/documents',
      { bodyLimit: 15 * 1024 * 1024, schema: { hide: true, params: TokenParams, body: HostedUploadBody } },
      async (req) => {
        const { found, ctx } = await opened(req.params.token);
        const body = { ...req.body, customer_id: found.customer_id };
        return ok(await deps.inTransaction((trx) => service.uploadDocument(trx, ctx, body, deps.config.KYC_DOCUMENT_MAX_BYTES)));
      },
    );

    app.post('/kyc/verify/:token/submit', { schema: { hide: true, params: TokenParams } }, async (req) => {
      const { found, ctx } = await opened(req.params.token);
      await deps.inTransaction((trx) => service.submitKyc(trx, ctx, { customer_id: found.customer_id, kyc_level: found.level }, policy));
      return ok(await service.getKycStatus(deps.db, ctx, found.customer_id, found.level));
    });
  };
}
