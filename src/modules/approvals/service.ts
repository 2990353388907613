import { z } from 'zod';
import type { Queryable } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import { InvalidStoredSettings } from '../../core/settings.js';
import type { Page } from '../../db/pagination.js';
import { newId } from '../../lib/ids.js';
import { isKnownCurrency, parseAmount } from '../../lib/money.js';
import * as repo from './repo.js';
import type { Timeline } from '../../core/clock.js';

export type { ApprovalRow } from './repo.js';

/**
 * Maker-checker approvals: one mechanism for FX orders, payouts above a threshold and new payees.
 *
 * The policy is the business setting `approvals` (tenant settings, set by the operator CLI or the
 * dashboard's Approvals page), for both environments with optional per-environment overrides:
 *
 *   "approvals": { "fx_orders": true, "payouts_above": { "USD": "1000.00", "NGN": "0" },
 *                  "new_payees": true, "expire_after_hours": 24, "live": { "fx_orders": false } }
 *
 * Everything is off by default. `payouts_above` maps a currency to the amount a payout must
 * exceed to wait (`"0"`: every payout in that currency); a currency not listed never waits.
 *
 * The item's module asks `policyOf` whether to wait, writes its own row in its waiting state and
 * calls `requestApproval` in the same transaction. The decision (`decide`, dashboard only) and
 * the expiry (`expireApproval`, background job) are guarded transitions of the approval row; the
 * caller then applies the outcome to the item in the same transaction.
 */
const Flags = z.strictObject({
  fx_orders: z.boolean().optional(),
  payouts_above: z.record(z.string().regex(/^[A-Z]{3}$/), z.union([z.string().max(40), z.number()])).optional(),
  new_payees: z.boolean().optional(),
  expire_after_hours: z
    .number()
    .positive()
    .max(24 * 90)
    .optional(),
});
const Setting = Flags.extend({ sandbox: Flags.optional(), live: Flags.optional() });
export type ApprovalSetting = z.infer<typeof Setting>;

export const DEFAULT_EXPIRE_AFTER_HOURS = 24;

export interface ApprovalPolicy {
  fxOrders: boolean;
  newPayees: boolean;
  /** Per currency: a payout above this many minor units waits. */
  payoutsAbove: Map<string, bigint>;
  expireAfterHours: number;
}

function threshold(currency: string, value: string | number): bigint {
  if (!isKnownCurrency(currency)) throw new Error(`approvals.payouts_above: unknown currency ${currency}`);
  if (/^0+(\.0*)?$/.test(String(value).trim())) return 0n;
  return parseAmount(value, currency, `approvals.payouts_above.${currency}`);
}

/** Parses a setting (throws on a malformed one: the operator's mistake must not silently switch approvals off). */
export function parsePolicy(raw: unknown, environment: Scope['environment']): ApprovalPolicy {
  if (raw === undefined || raw === null)
    return { fxOrders: false, newPayees: false, payoutsAbove: new Map(), expireAfterHours: DEFAULT_EXPIRE_AFTER_HOURS };
  const parsed = Setting.safeParse(raw);
  if (!parsed.success) throw new Error(`invalid approvals setting: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`);
  const merged = { ...parsed.data, ...parsed.data[environment] };
  return {
    fxOrders: merged.fx_orders ?? false,
    newPayees: merged.new_payees ?? false,
    payoutsAbove: new Map(Object.entries(merged.payouts_above ?? {}).map(([ccy, v]) => [ccy, threshold(ccy, v)])),
    expireAfterHours: merged.expire_after_hours ?? DEFAULT_EXPIRE_AFTER_HOURS,
  };
}

/**
 * The policy of the request's business and environment. A stored setting that does not parse
 * (edited around `validateSetting`) is the operator's to fix: `InvalidStoredSettings`, naming the
 * business (500 `internal_error` for the request, never a client error).
 */
export function policyOf(ctx: Pick<RequestContext, 'tenantId' | 'environment' | 'settings'>): ApprovalPolicy {
  try {
    return parsePolicy(ctx.settings.approvals, ctx.environment);
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new InvalidStoredSettings(ctx.tenantId, ['approvals'], `approvals: ${why}`);
  }
}

/** Checks a setting before it is stored (the dashboard form, the CLI). */
export function validateSetting(raw: unknown): ApprovalSetting {
  parsePolicy(raw, 'sandbox');
  parsePolicy(raw, 'live');
  return Setting.parse(raw);
}

export function payoutNeedsApproval(policy: ApprovalPolicy, currency: string, amount: bigint): boolean {
  const limit = policy.payoutsAbove.get(currency);
  return limit !== undefined && amount > limit;
}

/** Who made the item: a dashboard user, or (null user) an API key. */
export interface Maker {
  userId: string | null;
  role: string;
}
export const API_KEY_MAKER: Maker = { userId: null, role: 'api_key' };

/** Who decides: a dashboard user allowed to approve. */
export interface Checker {
  userId: string;
  email: string;
}

export interface ApprovalRequest {
  kind: repo.ApprovalKind;
  subjectId: string;
  summary: string;
  amount?: bigint | null;
  currency?: string | null;
  maker?: Maker;
  /** Never later than this (an FX quote's locked rate, say); otherwise the policy's expiry. */
  expiresBy?: Date | null;
}

export function expiryOf(policy: ApprovalPolicy, expiresBy?: Date | null, now = Date.now()): Date {
  const byPolicy = new Date(now + policy.expireAfterHours * 3_600_000);
  return expiresBy && expiresBy < byPolicy ? expiresBy : byPolicy;
}

/** Records that the item waits for a decision (in the transaction that created the item). */
export async function requestApproval(
  db: Queryable,
  scope: Scope,
  policy: ApprovalPolicy,
  req: ApprovalRequest,
): Promise<repo.ApprovalRow> {
  const maker = req.maker ?? API_KEY_MAKER;
  return repo.insertApproval(db, {
    id: newId(),
    tenant_id: scope.tenantId,
    environment: scope.environment,
    kind: req.kind,
    subject_id: req.subjectId,
    summary: req.summary,
    amount: req.amount ?? null,
    currency: req.currency ?? null,
    created_by_user_id: maker.userId,
    created_by_role: maker.role,
    expires_at: expiryOf(policy, req.expiresBy),
  });
}

/**
 * Approves or rejects a waiting item, once. Refused (409 `invalid_state_transition`) when it was
 * already decided or has expired, and (403) when the checker is the maker. The caller applies the
 * outcome to the item in the same transaction.
 */
export async function decide(
  db: Queryable,
  scope: Scope,
  id: string,
  decision: 'approved' | 'rejected',
  checker: Checker,
  reason: string | null = null,
): Promise<repo.ApprovalRow> {
  const current = await repo.findApproval(db, scope, id);
  if (!current) throw notFound('Approval');
  if (current.created_by_user_id !== null && current.created_by_user_id === checker.userId) {
    throw new AppError('forbidden', 'The person who made a request cannot approve or reject it; another approver must.');
  }
  const row = await repo.settleApproval(db, scope, id, { status: decision, userId: checker.userId, email: checker.email, reason });
  if (row) return row;
  const now = await repo.findApproval(db, scope, id);
  const status = now?.status === 'waiting_approval' ? 'expired' : (now?.status ?? 'gone');
  throw new AppError('invalid_state_transition', `This request is already ${status}; nothing was changed.`);
}

/** Expires one due approval, once (undefined when it was decided or expired meanwhile). */
export async function expireApproval(db: Queryable, scope: Scope, id: string, t: Timeline): Promise<repo.ApprovalRow | undefined> {
  return repo.settleApproval(db, scope, id, { status: 'expired' }, t);
}

export const dueExpiries = repo.dueExpiries;

export function listApprovals(db: Queryable, scope: Scope, query: repo.ListApprovalsQuery): Promise<Page<repo.ApprovalRow>> {
  return repo.listApprovals(db, scope, query);
}
