import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, notFound } from '../core/errors.js';
import type { Html } from '../dashboard/html.js';
import { requireOps, type OpsPermission } from './roles.js';
import type { OpsSession } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    opsSession: OpsSession | null;
  }
  interface FastifyContextConfig {
    /** Console pages reachable without an operator session (log in, setup link). */
    opsPublic?: boolean;
  }
}

export const formOf = (request: FastifyRequest): URLSearchParams =>
  request.body instanceof URLSearchParams ? request.body : new URLSearchParams();

export function sendPage(reply: FastifyReply, page: Html, status = 200) {
  return reply.code(status).type('text/html; charset=utf-8').send(page.value);
}

export const seeOther = (reply: FastifyReply, path: string) => reply.code(303).header('location', path).send();

export function opsSessionOf(request: FastifyRequest): OpsSession {
  if (!request.opsSession) throw new AppError('unauthorized');
  return request.opsSession;
}

/** The session, after checking the role may do this (403 otherwise). */
export function allowed(request: FastifyRequest, permission: OpsPermission): OpsSession {
  const session = opsSessionOf(request);
  requireOps(session.role, permission);
  return session;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An id from the path: a malformed one is simply not found. */
export function uuidParam(id: string): string {
  if (!UUID.test(id)) throw notFound('Page');
  return id.toLowerCase();
}
