import type { FastifyReply, FastifyRequest } from 'fastify';
import { addCookie, cookieNames, isSecureRequest, parseCookies, randomToken, serializeCookie } from './security.js';
import { AppError } from '../core/errors.js';
import type { Html } from './html.js';
import type { Session } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    dashboardSession: Session | null;
  }
  interface FastifyContextConfig {
    /** Dashboard pages reachable without a session (log in, sign up, assets). */
    dashboardPublic?: boolean;
  }
}

/** Form bodies arrive as URLSearchParams (parsed only inside the dashboard plugin). */
export type Form = URLSearchParams;

export function sendPage(reply: FastifyReply, page: Html, status = 200) {
  return reply.code(status).type('text/html; charset=utf-8').send(page.value);
}

/** 303 after a POST, so reloading the next page never repeats the action. */
export function seeOther(reply: FastifyReply, path: string) {
  return reply.code(303).header('location', path).send();
}

export function formOf(request: FastifyRequest): Form {
  return request.body instanceof URLSearchParams ? request.body : new URLSearchParams();
}

export function sessionOf(request: FastifyRequest): Session {
  if (!request.dashboardSession) throw new AppError('unauthorized');
  return request.dashboardSession;
}

export function sessionCookie(request: FastifyRequest, token: string, maxAgeSeconds: number): string {
  const secure = isSecureRequest(request);
  return serializeCookie(cookieNames(secure).session, token, { secure, maxAgeSeconds, sameSite: 'Lax' });
}

/** The double-submit token of the log-in and sign-up forms (no session exists yet). */
export function preauthToken(request: FastifyRequest, reply: FastifyReply): string {
  const secure = isSecureRequest(request);
  const name = cookieNames(secure).preauth;
  const existing = parseCookies(request.headers.cookie)[name];
  if (existing && existing.length === 43) return existing;
  const token = randomToken();
  addCookie(reply, serializeCookie(name, token, { secure, maxAgeSeconds: 3600, sameSite: 'Strict' }));
  return token;
}

/** The address the browser used, for commands a person pastes (curl) and links sent elsewhere. */
export function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.headers.host ?? 'localhost'}`;
}
