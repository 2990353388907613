import type { FastifyRequest } from 'fastify';
import { notFound } from '../core/errors.js';
import { isUuid } from '../lib/ids.js';
import { html, type Html } from './html.js';
import type { Session } from './service.js';

/** What the detail pages share: the session's scope, the path's id, a titled card. */
export const scopeOf = (s: Session) => ({ tenantId: s.tenantId, environment: s.environment });

/** The `:id` of the path; anything but a UUID is a 404 like an id that is not there. */
export function idOf(request: FastifyRequest, what: string): string {
  const id = (request.params as { id: string }).id;
  if (!isUuid(id)) throw notFound(what);
  return id;
}

export const section = (id: string, title: string, body: Html | string) =>
  html`<section class="card" aria-labelledby="${id}"><h2 id="${id}">${title}</h2>${body}</section>`;

/** A transaction's own page (transactions have no kind in the layout's links). */
export const transactionPath = (id: string) => `/dashboard/transactions/${encodeURIComponent(id)}`;
