import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_CAPTURED_BODY_BYTES, type RequestLogSink } from '../core/request-log.js';
import { isApiRequest } from './context.js';
import { answerKeysKnownClean } from './serializer.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The API request log of this process (null when switched off by REQUEST_LOG=off). */
    requestLog: RequestLogSink | null;
  }
  interface FastifyRequest {
    /** The response payload kept for the request log (text only). */
    requestLogPayload: string | null;
    /** Its writer knew it to hold no key that redaction hides (serializer.ts). */
    requestLogPayloadKeysClean: boolean;
    /**
     * The event written in the request's transaction whose data is its answer (idempotency-batch.ts):
     * the log keeps the event's id instead of the answer's text.
     */
    answerEventId: string | null;
  }
}

const KEY_PREFIX = /^((?:sk|pk)_(?:sandbox|live)_)[A-Za-z0-9]{4,}$/;

/** The key as the keys page shows it (`sk_sandbox_…abcd`); never the key itself. */
export function keyPrefixOf(header: string | string[] | undefined): string | null {
  const key = (Array.isArray(header) ? header[0] : header)?.trim();
  const m = key ? KEY_PREFIX.exec(key) : null;
  return m ? `${m[1]}…${key!.slice(-4)}` : null;
}

function headerText(value: string | string[] | undefined): string | null {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v === '' ? null : v;
}

function bodyTooLarge(request: FastifyRequest): boolean {
  return Number(request.headers['content-length'] ?? 0) > MAX_CAPTURED_BODY_BYTES;
}

/**
 * Every /v1 request of a business (one that got as far as its API key) goes to the request log
 * once its response is sent. The hooks only copy references into the log's buffer: the writing
 * happens later in the log's background flusher, so the request never waits for it and never
 * fails because of it.
 */
export function registerRequestLog(app: FastifyInstance, log: RequestLogSink): void {
  app.decorateRequest('requestLogPayload', null);
  app.decorateRequest('answerEventId', null);
  app.decorateRequest('requestLogPayloadKeysClean', false);

  app.addHook('onSend', (request: FastifyRequest, _reply: FastifyReply, payload: unknown, done: (err: null, p: unknown) => void) => {
    if (request.ctx && typeof payload === 'string' && payload.length <= MAX_CAPTURED_BODY_BYTES) {
      request.requestLogPayload = payload;
      request.requestLogPayloadKeysClean = answerKeysKnownClean(payload);
    }
    done(null, payload);
  });

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    try {
      const ctx = request.ctx;
      if (ctx && isApiRequest(request)) {
        const elapsed = reply.elapsedTime;
        log.record({
          tenantId: ctx.tenantId,
          environment: ctx.environment,
          requestId: String(request.id),
          requestIdMadeHere: request.headers['x-request-id'] !== request.id,
          method: request.method,
          url: request.url,
          status: reply.statusCode,
          durationMs: elapsed,
          idempotencyKey: headerText(request.headers['idempotency-key']),
          replayed: reply.getHeader('idempotency-replayed') === 'true',
          keyPrefix: keyPrefixOf(request.headers['api-key']),
          requestBody: bodyTooLarge(request) ? `[body of ${request.headers['content-length']} bytes not kept]` : request.body,
          responseBody: request.answerEventId === null ? request.requestLogPayload : null,
          responseKeysClean: request.requestLogPayloadKeysClean,
          responseEventId: request.answerEventId,
          startedAt: Date.now() - elapsed,
        });
      }
    } catch (err) {
      request.log.warn({ err }, 'request log: entry not recorded');
    }
    done();
  });
}
