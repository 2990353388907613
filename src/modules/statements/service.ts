import { Readable } from 'node:stream';
import type { Queryable } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { validationError, type ErrorDetail } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import { uuidv7LowerBound, uuidv7Time } from '../../lib/ids.js';
import { formatAmount } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
import { getTenant } from '../tenants/service.js';
import { csvStatement, jsonStatement, pdfStatement, type Movement, type StatementHead } from './render.js';
import type { BalancesQuery, BalancesResponse } from './schema.js';

type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** A period bound: a date-only `from` starts its day, a date-only `to` includes its whole day. */
export function boundOf(value: string, end: boolean): Date {
  if (DATE_ONLY.test(value)) {
    const day = new Date(`${value}T00:00:00.000Z`);
    return end ? new Date(day.getTime() + 86_400_000) : day;
  }
  const d = new Date(value);
  return end ? new Date(d.getTime() + 1) : d;
}

/** Every entry drawn at or before `at`'s millisecond lies below this id. */
const after = (at: Date) => uuidv7LowerBound(new Date(at.getTime() + 1));
/** Every entry drawn before `at`'s millisecond lies below this id. */
const before = (at: Date) => uuidv7LowerBound(at);

/** The account as the API shows it (404 when it is not one of this business and environment). */
export async function requireAccount(db: Queryable, ctx: Scope, id: string) {
  return accounts.getAccount(db, ctx, id);
}

/** Posted and available balance just before `bound` (`at` is the same instant as a date). */
async function balancesAt(db: Queryable, ctx: Scope, accountId: string, at: Date, bound: string) {
  const [posted, held] = await Promise.all([ledger.postedBefore(db, ctx, accountId, bound), ledger.heldAt(db, ctx, accountId, at, bound)]);
  return { posted, available: posted - held };
}

/** A checked period [from, to): `to` defaults to now and never passes it; `from` must come first. */
export function periodOf(fromText: string, toText: string | undefined, now: Date, field = 'from'): { from: Date; to: Date } {
  const from = boundOf(fromText, false);
  const requested = toText === undefined ? now : boundOf(toText, true);
  const to = requested > now ? now : requested;
  const details: ErrorDetail[] = [];
  if (from > now) details.push({ field, code: 'invalid', message: 'The period must not start in the future' });
  else if (from >= to) details.push({ field, code: 'invalid', message: 'from must be before to' });
  if (details.length > 0) throw validationError(details);
  return { from, to };
}

/**
 * Balances as they stood: at `as_of` (default now), or for the period from/to: opening (just
 * before `from`) and closing (just before `to`) balances and the credits and debits between.
 */
export async function balances(db: Queryable, ctx: Scope, accountId: string, query: BalancesQuery): Promise<BalancesResponse> {
  const now = new Date();
  if (query.as_of !== undefined && (query.from !== undefined || query.to !== undefined)) {
    throw validationError([{ field: 'as_of', code: 'invalid', message: 'Give either as_of or from/to, not both' }]);
  }
  if (query.to !== undefined && query.from === undefined) {
    throw validationError([{ field: 'from', code: 'required', message: 'A period needs from' }]);
  }
  const account = await requireAccount(db, ctx, accountId);
  const money = (minor: bigint) => formatAmount(minor, account.currency);
  if (query.from === undefined) {
    const at = query.as_of === undefined ? now : new Date(query.as_of);
    if (at > now) throw validationError([{ field: 'as_of', code: 'invalid', message: 'as_of must not be in the future' }]);
    const b = await balancesAt(db, ctx, account.id, at, after(at));
    return {
      account_id: account.id,
      currency: account.currency,
      as_of: at.toISOString(),
      balance: money(b.posted),
      available_balance: money(b.available),
    };
  }
  const { from, to } = periodOf(query.from, query.to, now);
  const [opening, closing, totals] = await Promise.all([
    balancesAt(db, ctx, account.id, from, before(from)),
    balancesAt(db, ctx, account.id, to, before(to)),
    ledger.totalsBetween(db, ctx, account.id, before(from), before(to)),
  ]);
  return {
    account_id: account.id,
    currency: account.currency,
    from: from.toISOString(),
    to: to.toISOString(),
    opening_balance: money(opening.posted),
    opening_available_balance: money(opening.available),
    closing_balance: money(closing.posted),
    closing_available_balance: money(closing.available),
    total_credits: money(totals.credits),
    total_debits: money(totals.debits),
    credit_count: totals.creditCount,
    debit_count: totals.debitCount,
  };
}

const KIND_LABELS: Record<string, string> = {
  funding: 'Incoming bank transfer',
  internal_transfer: 'Internal transfer',
  payout: 'Payout',
  payout_fee: 'Payout fee',
  payout_fx: 'Payout conversion',
  payout_return: 'Returned payout',
  collection: 'Collection',
  card_funding: 'Card funding',
  card_payment: 'Card payment',
  card_withdrawal: 'Card withdrawal',
  fx: 'Currency conversion',
  fx_order: 'Currency conversion',
  fx_limit_order: 'Currency conversion',
};

export interface StatementQuery {
  from?: string | undefined;
  to?: string | undefined;
  month?: string | undefined;
}

/** The statement's period: a calendar month (UTC), or from/to; the current month by default. */
export function statementPeriod(query: StatementQuery, now: Date): { from: Date; to: Date } {
  if (query.month !== undefined && (query.from !== undefined || query.to !== undefined)) {
    throw validationError([{ field: 'month', code: 'invalid', message: 'Give either month or from/to, not both' }]);
  }
  if (query.to !== undefined && query.from === undefined) {
    throw validationError([{ field: 'from', code: 'required', message: 'A period needs from' }]);
  }
  if (query.from !== undefined) return periodOf(query.from, query.to, now);
  const month = query.month ?? now.toISOString().slice(0, 7);
  const [year, m] = month.split('-').map(Number) as [number, number];
  const from = new Date(Date.UTC(year, m - 1, 1));
  const end = new Date(Date.UTC(year, m, 1));
  if (from > now) throw validationError([{ field: 'month', code: 'invalid', message: 'The month must not be in the future' }]);
  return { from, to: end > now ? now : end };
}

/** How many movements a statement page reads at once: what sits in memory, whatever the period. */
export const STATEMENT_PAGE = 500;

/**
 * A statement: its head (parties, period, opening and closing balances, totals: a few index
 * reads) and its movements as keyset pages, oldest first, each with the running balance the
 * ledger recorded, so a year of a busy account never sits in memory.
 */
export async function statement(db: Queryable, ctx: Scope, accountId: string, query: StatementQuery, pageSize = STATEMENT_PAGE) {
  const now = new Date();
  const { from, to } = statementPeriod(query, now);
  const account = await requireAccount(db, ctx, accountId);
  const money = (minor: bigint) => formatAmount(minor, account.currency);
  const [opening, closing, totals, tenant] = await Promise.all([
    ledger.postedBefore(db, ctx, account.id, before(from)),
    ledger.postedBefore(db, ctx, account.id, before(to)),
    ledger.totalsBetween(db, ctx, account.id, before(from), before(to)),
    getTenant(db, ctx.tenantId),
  ]);
  const head: StatementHead = {
    account_id: account.id,
    currency: account.currency,
    business_name: tenant?.name ?? '',
    account_holder: account.bank_details.account_name,
    account_label: account.label,
    bank_details: account.bank_details,
    from: from.toISOString(),
    to: to.toISOString(),
    opening_balance: money(opening),
    closing_balance: money(closing),
    total_credits: money(totals.credits),
    total_debits: money(totals.debits),
    credit_count: totals.creditCount,
    debit_count: totals.debitCount,
  };
  const toMovement = (e: ledger.HistoryEntry): Movement => ({
    id: e.id,
    date: new Date(uuidv7Time(e.id)).toISOString(),
    type: e.transaction?.transactionType ?? e.kind,
    description: e.transaction?.description || KIND_LABELS[e.kind] || e.kind.replace(/_/g, ' '),
    reference: e.transaction?.clientReference ?? e.reference,
    transaction_id: e.transaction?.id ?? null,
    direction: e.amount > 0n ? 'credit' : 'debit',
    amount: money(e.amount > 0n ? e.amount : -e.amount),
    balance_after: money(e.balanceAfter),
  });
  async function* pages(): AsyncGenerator<Movement[]> {
    let after = { id: before(from), inclusive: true };
    for (;;) {
      const rows = await ledger.entriesPage(db, ctx, account.id, after, before(to), pageSize);
      if (rows.length > 0) yield rows.map(toMovement);
      if (rows.length < pageSize) return;
      after = { id: rows[rows.length - 1]!.id, inclusive: false };
    }
  }
  return { head, pages: pages() };
}

export type StatementFormat = 'json' | 'csv' | 'pdf';

/**
 * A statement as a file to stream: its name, content type and body. Everything that can be
 * refused (the period, the account) is read before it returns, so a refusal is an ordinary error
 * answer, never a broken download.
 */
export async function statementFile(db: Queryable, ctx: Scope, accountId: string, query: StatementQuery, format: StatementFormat) {
  const { head, pages } = await statement(db, ctx, accountId, query);
  const name = `statement_${head.bank_details.account_number}_${head.from.slice(0, 10)}_${head.to.slice(0, 10)}.${format}`;
  if (format === 'pdf')
    return { name, contentType: 'application/pdf', body: (await pdfStatement(head, pages, new Date())) as unknown as Readable };
  if (format === 'csv') return { name, contentType: 'text/csv; charset=utf-8', body: Readable.from(csvStatement(head, pages)) };
  return { name, contentType: 'application/json; charset=utf-8', body: Readable.from(jsonStatement(head, pages)) };
}
