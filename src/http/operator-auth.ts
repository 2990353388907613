import { createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError, notFound } from '../core/errors.js';
import { constantTimeEqual } from '../lib/crypto.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The operator's door (the operator API and any operator console): a bearer token from the
 * configuration, compared in constant time. Without a configured token the operator surface does
 * not exist (404), so an unconfigured deployment shows nothing of it.
 */
export function operatorGuard(token: string | undefined) {
  const expected = token ? digest(token) : undefined;
  return async (request: FastifyRequest): Promise<void> => {
    if (!expected) throw notFound('Route');
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    if (!match || !constantTimeEqual(digest(match[1]!), expected)) {
      throw new AppError('unauthorized', 'The operator API needs Authorization: Bearer <OPERATOR_API_TOKEN>');
    }
  };
}
