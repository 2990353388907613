import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { AppError } from '../core/errors.js';
import { statusOf } from '../http/errors.js';
import type { Page } from '../db/pagination.js';
import { emptyState, isEmptyKind } from './empty-states.js';
import { html, type Html } from './html.js';
import { originOf } from './replies.js';
import { alert, appPage, filterForm, pager, table, type Column, type FilterField, type Section } from './layout.js';
import type { Session } from './service.js';
import type { Scope } from '../core/context.js';

export interface ListView<Q, T> {
  section: Section;
  title: string;
  /** The API's own query schema for the list: the same filters, validated the same way. */
  schema: z.ZodType<Q>;
  fields: FilterField[];
  columns: Column<T>[];
  empty: string;
  load: (scope: Scope, query: Q) => Promise<Page<T>>;
  /** Shown between the filters and the table (the accounts' totals), read beside the page. */
  above?: (scope: Scope) => Promise<Html>;
}

/** The non-empty string values of these query parameters (other parameters are ignored). */
export function queryValues(request: FastifyRequest, names: string[]): Record<string, string | undefined> {
  const query = (request.query ?? {}) as Record<string, unknown>;
  const values: Record<string, string | undefined> = {};
  for (const name of names) {
    const v = query[name];
    if (typeof v === 'string' && v.trim() !== '') values[name] = v.trim();
  }
  return values;
}

/** The filter values of the query string, only the fields this view knows (strings only). */
function filterValues(request: FastifyRequest, fields: FilterField[]): Record<string, string | undefined> {
  return queryValues(request, [...fields.map((f) => f.name), 'page']);
}

/**
 * A read-only, filtered, paginated list of the session's environment. A bad filter shows the
 * validation messages on the page (the API would answer 400) instead of failing.
 */
export async function renderList<Q, T>(request: FastifyRequest, session: Session, view: ListView<Q, T>): Promise<Html> {
  const values = filterValues(request, view.fields);
  const base = `/dashboard/${view.section}`;
  const form = filterForm(base, view.fields, values);
  const parsed = view.schema.safeParse({ ...values, items_per_page: '20' });
  const scope = { tenantId: session.tenantId, environment: session.environment };
  if (!parsed.success) {
    const messages = parsed.error.issues.map((i) => `${i.path.join('.') || 'filter'}: ${i.message}`);
    return appPage(session, view.section, view.title, html`${form}${alert('error', `Invalid filter. ${messages.join('; ')}`)}`);
  }
  let page: Page<T>;
  let above: Html | string;
  try {
    [page, above] = await Promise.all([view.load(scope, parsed.data), view.above?.(scope) ?? '']);
  } catch (err) {
    if (!(err instanceof AppError) || statusOf(err) !== 400) throw err;
    return appPage(session, view.section, view.title, html`${form}${alert('error', err.message)}`);
  }
  const { page: _p, ...filters } = values;
  // Unfiltered and empty: the list has nothing yet, so show its first step instead of "none match".
  if (page.items.length === 0 && Object.keys(filters).length === 0 && isEmptyKind(view.section)) {
    return appPage(session, view.section, view.title, html`${form}${emptyState(view.section, originOf(request), session.environment)}`);
  }
  return appPage(
    session,
    view.section,
    view.title,
    html`${form}${above}${table(view.title, view.columns, page.items, view.empty)}${pager(base, filters, page as Page<unknown>)}`,
  );
}
