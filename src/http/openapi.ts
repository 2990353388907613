import type { FastifySchema } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../core/errors.js';
import { ERROR_STATUS } from './errors.js';
import { routeErrorCodes } from './route-errors.js';

const SUMMARY: Record<number, string> = {
  400: 'Invalid request: malformed JSON, invalid fields (every one listed in `details`), a bad Idempotency-Key',
  401: 'Missing, invalid or expired API key',
  403: 'The key may not do this (public key, other business, HTTPS required, feature or KYC level missing)',
  404: 'No such resource in this business and environment',
  409: 'State conflict, or the same Idempotency-Key is still in flight (Retry-After)',
  412: 'Documents missing for server-to-server KYC',
  413: 'Body too large',
  415: 'Body not sent as application/json',
  422: 'Business rule refused it (insufficient funds, limits, currency), or an Idempotency-Key reused for another request',
  429: 'Rate limited (Retry-After, RateLimit headers)',
  500: 'Something went wrong on our side; the request id is logged with the cause',
  503: 'The database is briefly unavailable; retry after Retry-After',
};

function errorEnvelope(codes: [ErrorCode, ...ErrorCode[]]) {
  return z.object({
    data: z.null(),
    error: z.object({
      code: z.enum(codes),
      message: z.string(),
      request_id: z.string(),
      details: z.array(z.object({ field: z.string(), code: z.string(), message: z.string() })),
    }),
  });
}

/** A route's own error envelopes: per status it can answer, `code` closed to the route's codes of that status. */
function declaredErrorSchemas(codes: Set<ErrorCode>): Map<number, z.ZodType> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of ERROR_CODES) {
    if (!codes.has(code)) continue;
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const schemas = new Map<number, z.ZodType>();
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    schemas.set(status, errorEnvelope(list as [ErrorCode, ...ErrorCode[]]).meta({ description: SUMMARY[status] ?? `Error ${status}` }));
  }
  return schemas;
}

/**
 * Success answers of routes that stream a file instead of an envelope. They have no response
 * schema (the serializer must never see the stream), so the document states them here; without
 * it a generated client types their success as nothing at all.
 */
const FILE_RESPONSES: Record<string, Record<number, unknown>> = {
  '/v1/transactions/export': {
    200: {
      description: 'The file, as an attachment: CSV (`export_format=csv`, the default) or a JSON array of transactions (`json`)',
      content: {
        'text/csv': { schema: z.string() },
        'application/json': { schema: z.array(z.record(z.string(), z.unknown())) },
      },
    },
  },
};

/**
 * The OpenAPI transform: the route's own schemas (jsonSchemaTransform), plus the error envelope
 * of every error status of every /v1 operation, so a generated client knows the error shape, and
 * the success answer of the file routes (FILE_RESPONSES). Each route gets only the statuses and
 * codes it can answer: its declared codes plus `constructionCodes` (every /v1 route declares them,
 * assertDeclaresErrors).
 * Only the document changes; answers are still rendered by the one error handler.
 */
export const openApiTransform: typeof jsonSchemaTransform = (input) => {
  const { schema, url, route } = input;
  if (!schema) return jsonSchemaTransform(input);
  const { errors, ...rest } = schema as FastifySchema;
  if (!url.startsWith('/v1/') || rest.hide) return jsonSchemaTransform({ ...input, schema: rest });
  const method = [route.method].flat()[0] ?? 'GET';
  const response: Record<string, unknown> = { ...FILE_RESPONSES[url], ...(rest.response as Record<string, unknown>) };
  const config = route.config;
  const codes = routeErrorCodes(
    { method, url, hasBody: Boolean(rest.body), publicKeyAllowed: config?.publicKeyAllowed, noAuth: config?.noAuth },
    errors ?? [],
  );
  for (const [status, errorSchema] of declaredErrorSchemas(codes)) {
    if (!(status in response)) response[status] = errorSchema;
  }
  return jsonSchemaTransform({ ...input, schema: { ...rest, response } });
};
