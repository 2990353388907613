import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError, type ErrorDetail, notFound } from '../core/errors.js';
import { InvalidStoredSettings } from '../core/settings.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { statusOf } from './errors.js';
import { ReplayResponse } from './replay.js';
import { checkDeclared } from './route-errors.js';

/** `{data, error: null}`: every success response. */
export function envelope<T extends z.ZodType>(data: T) {
  return z.object({ data, error: z.null() });
}

export function ok<T>(data: T): { data: T; error: null } {
  return { data, error: null };
}

interface ZodLikeIssue {
  keyword: string;
  instancePath: string;
  message: string;
  params: { keys?: string[]; input?: unknown; expected?: unknown };
}

/** Zod issues → `details`, one entry per invalid field, paths dotted (`address.state`). */
function detailsFromValidation(issues: ZodLikeIssue[], context: string | undefined): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    const base = issue.instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
    if (issue.keyword === 'unrecognized_keys') {
      for (const key of issue.params.keys ?? []) {
        details.push({ field: base ? `${base}.${key}` : key, code: 'unknown_field', message: 'Unknown field' });
      }
      continue;
    }
    const missing = issue.keyword === 'invalid_type' && issue.params.input === undefined;
    details.push({
      field: base || context || 'body',
      code: missing ? 'required' : issue.keyword === 'custom' ? 'invalid' : issue.keyword,
      message: missing ? 'Required' : issue.message,
    });
  }
  return details;
}

function errorBody(request: FastifyRequest, code: string, message: string, details: ErrorDetail[] = []) {
  return { data: null, error: { code, message, request_id: String(request.id), details } };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, err: AppError) {
  checkDeclared(request, err.code);
  for (const [name, value] of Object.entries(err.headers)) reply.header(name, value);
  return reply.code(statusOf(err)).send(errorBody(request, err.code, err.message, err.details));
}

/**
 * PostgreSQL errors (SQLSTATE, the same on pg and PGlite) that a client's input can cause, as the
 * client's error. Class 22 (data exception: a value the column type refuses, out of range, NUL,
 * bad encoding) and 54000 (a value too large to index) are 400; a unique violation no service
 * turned into its own code is 409. Everything else from the database is our fault: 500.
 */
export function clientDatabaseError(code: string | undefined): AppError | null {
  if (!code || !/^[0-9A-Z]{5}$/.test(code)) return null;
  if (code.startsWith('22') || code === '54000') {
    return new AppError('validation_failed', 'A value in the request is not acceptable', [
      { field: 'request', code: 'invalid', message: 'A value is malformed, out of range or too large' },
    ]);
  }
  if (code === '23505') return new AppError('conflict');
  // Serialization failures and deadlocks are transient: the client retries, nothing was done.
  if (code === '40001' || code === '40P01') {
    return new AppError('service_unavailable', undefined, [], { 'Retry-After': '1' });
  }
  return null;
}

/** Maps every failure to the envelope. Nothing internal (stack, SQL, names) reaches the client. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError & { code?: string }, request, reply) => {
    if (error instanceof AppError) return sendError(request, reply, error);
    if (error instanceof ReplayResponse) {
      return reply.header('Idempotency-Replayed', 'true').code(error.status).type('application/json; charset=utf-8').send(error.bodyText);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const issues = error.validation as unknown as ZodLikeIssue[];
      const details = detailsFromValidation(issues, error.validationContext);
      const where = error.validationContext === 'querystring' ? 'query parameters' : error.validationContext;
      return sendError(request, reply, new AppError('validation_failed', `Invalid ${where ?? 'request'}`, details));
    }
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(request, reply, new AppError('payload_too_large'));
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return sendError(request, reply, new AppError('unsupported_media_type'));
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return sendError(request, reply, new AppError('invalid_json'));
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendError(request, reply, new AppError('bad_request', 'Content-Length does not match the body'));
    }
    if (error.statusCode === 400 && error.name === 'SyntaxError') {
      return sendError(request, reply, new AppError('invalid_json'));
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      return sendError(request, reply, new AppError('service_unavailable', undefined, [], { 'Retry-After': '5' }));
    }
    if (error instanceof InvalidStoredSettings) {
      // A business's stored settings are broken (edited around the checks): the operator must fix
      // them (`tenant settings`); the client gets the contract's 500 and the request id to quote.
      request.log.error(
        { tenant_id: error.tenantId, settings_paths: error.paths, request_id: request.id },
        `${error.message} (correct them with: tenant settings --tenant ${error.tenantId} --set KEY=JSON)`,
      );
      return sendError(request, reply, new AppError('internal_error'));
    }
    const fromDatabase = clientDatabaseError(error.code);
    if (fromDatabase) {
      request.log.warn({ err: error, request_id: request.id }, 'database refused a client value');
      return sendError(request, reply, fromDatabase);
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return sendError(request, reply, new AppError('bad_request'));
    }
    request.log.error({ err: error, request_id: request.id }, 'unhandled error');
    return sendError(request, reply, new AppError('internal_error'));
  });

  app.setNotFoundHandler((request, reply) => sendError(request, reply, notFound(`Route ${request.method} ${request.url.split('?')[0]}`)));
}
