import { sql, type SelectQueryBuilder } from 'kysely';
import { z } from 'zod';
import type { Queryable } from './client.js';
import { isUuid, uuidv7LowerBound } from '../lib/ids.js';
import { AppError } from '../core/errors.js';

/** Exact counts up to this many matches; beyond, total_items and total_pages are null. */
const COUNT_CAP = 10_000;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** `from`/`to`: RFC 3339 or YYYY-MM-DD (a date-only `to` includes that whole day). */
export const DateParam = z.string().refine((s) => {
  if (DATE_ONLY.test(s)) return !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s);
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s));
}, 'Use RFC 3339 (2024-01-15T10:30:00Z) or YYYY-MM-DD');

export const PageQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  items_per_page: z.coerce.number().int().min(1).max(100).optional(),
  /** The reference's name for items_per_page on some lists. */
  limit: z.coerce.number().int().min(1).max(100).optional(),
  cursor: z.string().max(200).optional(),
  from: DateParam.optional(),
  to: DateParam.optional(),
  start_date: DateParam.optional(),
  end_date: DateParam.optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

export function pageSchema<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    page: z.number().int(),
    items_per_page: z.number().int(),
    total_pages: z.number().int().nullable(),
    total_items: z.number().int().nullable(),
    next_cursor: z.string().nullable(),
  });
}

export interface Page<T> {
  items: T[];
  page: number;
  items_per_page: number;
  total_pages: number | null;
  total_items: number | null;
  next_cursor: string | null;
}

/**
 * Columns a caller adds to each row of one page by joins on the page's own keys (the dashboard's
 * names beside ids): the page stays one statement, and only the page's rows are joined (not the
 * rows an offset skips, nor the count's). `join` gets a query of the page's rows under the name of
 * their table (`transfers.source_id` still names the column) and adds one column, `extra`, which
 * the list hands back beside each item.
 */
export interface PageExtra<E> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  join: (qb: SelectQueryBuilder<any, any, any>) => SelectQueryBuilder<any, any, any>;
  /** Only carries the type of `extra`. */
  readonly shape?: E;
}

/** A list's item with the `extra` column of its row, when the page was read with one. */
export function withExtra<T extends object, E>(item: T, row: object, extra: PageExtra<E> | undefined): T & { extra?: E } {
  return extra ? { ...item, extra: (row as { extra?: E }).extra } : item;
}

function parseDate(value: string, endOfDay: boolean): Date {
  if (DATE_ONLY.test(value)) {
    const d = new Date(`${value}T00:00:00.000Z`);
    return endOfDay ? new Date(d.getTime() + 86_400_000) : d;
  }
  const d = new Date(value);
  return endOfDay ? new Date(d.getTime() + 1) : d;
}

/** Date range of a list as id bounds (ids are UUIDv7, so they sort by creation time). */
export function dateRange(query: PageQuery): { fromId?: string; toIdExclusive?: string } {
  const from = query.from ?? query.start_date;
  const to = query.to ?? query.end_date;
  const range: { fromId?: string; toIdExclusive?: string } = {};
  if (from) range.fromId = uuidv7LowerBound(parseDate(from, false));
  if (to) range.toIdExclusive = uuidv7LowerBound(parseDate(to, true));
  if (from && to && parseDate(from, false) > parseDate(to, true)) {
    throw new AppError('validation_failed', 'from must not be after to', [
      { field: 'from', code: 'invalid', message: 'from must not be after to' },
    ]);
  }
  return range;
}

const encodeCursor = (id: string) => Buffer.from(id, 'utf8').toString('base64url');
function decodeCursor(cursor: string): string {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isUuid(id)) {
    throw new AppError('validation_failed', 'Invalid cursor', [
      { field: 'cursor', code: 'invalid', message: 'Use a next_cursor from a previous page' },
    ]);
  }
  return id;
}

/**
 * Newest-first (or oldest-first) page of `base` (a query with its filters, no selection yet), ordered by `idColumn`
 * (a UUIDv7 primary key). `page` uses an offset; `cursor` is keyset and stays fast at any depth.
 * The count stops at COUNT_CAP so a huge filter never scans the whole table.
 */
export async function paginate<Row>(
  db: Queryable,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  base: SelectQueryBuilder<any, any, object>,
  idColumn: string,
  query: PageQuery,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  select: (qb: SelectQueryBuilder<any, any, object>) => SelectQueryBuilder<any, any, any>,
  order: 'desc' | 'asc' = 'desc',
  extra?: PageExtra<unknown>,
): Promise<Page<Row>> {
  const perPage = query.items_per_page ?? query.limit ?? 20;
  const { fromId, toIdExclusive } = dateRange(query);
  let filtered = base;
  if (fromId) filtered = filtered.where(idColumn, '>=', fromId);
  if (toIdExclusive) filtered = filtered.where(idColumn, '<', toIdExclusive);

  let itemsQuery = select(filtered)
    .orderBy(idColumn, order)
    .limit(perPage + 1);
  if (query.cursor) itemsQuery = itemsQuery.where(idColumn, order === 'desc' ? '<' : '>', decodeCursor(query.cursor));
  else if (query.page > 1) itemsQuery = itemsQuery.offset((query.page - 1) * perPage);

  const countQuery = filtered
    .select(sql`1`.as('one'))
    .limit(COUNT_CAP + 1)
    .as('capped');
  const [rows, countRow] = await Promise.all([
    (extra ? joined(db, itemsQuery, idColumn, order, extra) : itemsQuery).execute() as Promise<Row[]>,
    db
      .selectFrom(countQuery)
      .select(sql<string>`count(*)`.as('n'))
      .executeTakeFirst(),
  ]);
  const count = Number(countRow?.n ?? 0);
  const hasMore = rows.length > perPage;
  const items = hasMore ? rows.slice(0, perPage) : rows;
  const exact = count <= COUNT_CAP;
  const last = items[items.length - 1] as Record<string, unknown> | undefined;
  const lastId = last ? (last[idColumn.split('.').pop() as string] as string | undefined) : undefined;
  return {
    items,
    page: query.cursor ? 1 : query.page,
    items_per_page: perPage,
    total_items: exact ? count : null,
    total_pages: exact ? Math.ceil(count / perPage) : null,
    next_cursor: hasMore && lastId ? encodeCursor(lastId) : null,
  };
}

/** The page's rows, as a subquery named after their table, with the caller's joins (PageExtra). */
function joined(
  db: Queryable,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  page: SelectQueryBuilder<any, any, any>,
  idColumn: string,
  order: 'desc' | 'asc',
  extra: PageExtra<unknown>,
) {
  const table = idColumn.split('.')[0]!;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const rows = (db as any).selectFrom(page.as(table)).selectAll(table) as SelectQueryBuilder<any, any, any>;
  return extra.join(rows).orderBy(idColumn, order);
}
