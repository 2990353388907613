import type { Queryable } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { validationError, type ErrorDetail } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import { uuidv7LowerBound } from '../../lib/ids.js';
import { formatAmount } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
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
