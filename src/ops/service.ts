import { randomBytes } from 'node:crypto';
import { authenticator } from 'otplib';
import { z } from 'zod';
import type { Queryable } from '../db/client.js';
import { isUniqueViolation } from '../db/errors.js';
import { AppError, notFound } from '../core/errors.js';
import { sha256, type Sealer } from '../lib/crypto.js';
import { newId } from '../lib/ids.js';
import { hashPassword, verifyAgainstDummy, verifyPassword } from '../dashboard/passwords.js';
import * as repo from './repo.js';
import { isOpsRole, type OpsRole } from './roles.js';

/** Absolute session lifetime: shorter than a business's dashboard, the console decides more. */
export const OPS_SESSION_HOURS = 8;
/** A setup link works once, for this long. */
export const SETUP_HOURS = 24;
export const TOTP_ISSUER = 'Financial Services Ops';
/** RFC 6238 defaults (SHA-1, 6 digits, 30 s), one step of clock drift either way. */
const totp = authenticator.clone({ window: 1 });
const TOTP_STEP_SECONDS = 30;

export interface OpsSession {
  id: string;
  operatorId: string;
  email: string;
  role: OpsRole;
  csrfToken: string;
  totpEnabled: boolean;
}

/** Who did something: an operator, or the command line. */
export type Actor = { operatorId: string; email: string } | { operatorId: null; email: 'cli' };

export const EmailField = z.string().trim().toLowerCase().max(254).email('Enter a valid email address');
export const PasswordField = z.string().min(12, 'Use at least 12 characters').max(200, 'Use at most 200 characters');

export class OperatorExists extends Error {}

const token = () => randomBytes(32).toString('base64url');
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** The one-time setup path of an operator (prefix it with the server's origin). */
export const setupPath = (t: string) => `/ops/setup/${t}`;

/** Every decision goes through here: who, when (the row's default), what, why. Insert only. */
export async function audit(
  db: Queryable,
  actor: Actor,
  entry: {
    action: string;
    targetType: string;
    targetId: string;
    tenantId?: string | null;
    environment?: string | null;
    reason?: string | null;
    detail?: Record<string, unknown>;
  },
) {
  await repo.insertAudit(db, {
    id: newId(),
    operator_id: actor.operatorId,
    operator_email: actor.email,
    action: entry.action,
    target_type: entry.targetType,
    target_id: entry.targetId,
    tenant_id: entry.tenantId ?? null,
    environment: entry.environment ?? null,
    reason: entry.reason ?? null,
    detail: JSON.stringify(entry.detail ?? {}),
  });
}

/**
 * A new operator without a password: the one-time setup link lets them choose one (and then
 * enrol a second factor). Used by the CLI for the first operator and by an admin in the console.
 */
export async function createOperator(db: Queryable, actor: Actor, email: string, role: string) {
  const parsed = EmailField.safeParse(email);
  if (!parsed.success) throw new AppError('validation_failed', 'Enter a valid email address');
  if (!isOpsRole(role)) throw new AppError('validation_failed', 'The role must be compliance, operations, admin or viewer');
  if (await repo.findOperatorByEmail(db, parsed.data)) throw new OperatorExists();
  const setup = token();
  const id = newId();
  try {
    await repo.insertOperator(db, {
      id,
      email: parsed.data,
      role,
      password_hash: null,
      setup_token_hash: sha256(setup),
      setup_expires_at: new Date(Date.now() + SETUP_HOURS * 3_600_000),
      totp_secret_sealed: null,
      totp_pending_sealed: null,
      disabled_at: null,
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new OperatorExists();
    throw err;
  }
  await audit(db, actor, { action: 'operator.created', targetType: 'operator', targetId: id, detail: { email: parsed.data, role } });
  return { id, email: parsed.data, role, setupPath: setupPath(setup) };
}

/**
 * A fresh setup link for an existing operator (forgotten password, lost authenticator): the old
 * password, second factor and sessions stop working at once.
 */
export async function resetOperator(db: Queryable, actor: Actor, operatorId: string) {
  const op = await repo.findOperator(db, operatorId);
  if (!op) throw notFound('Operator');
  const setup = token();
  await repo.updateOperator(db, op.id, {
    password_hash: null,
    setup_token_hash: sha256(setup),
    setup_expires_at: new Date(Date.now() + SETUP_HOURS * 3_600_000),
    totp_secret_sealed: null,
    totp_pending_sealed: null,
    totp_last_step: null,
  });
  await repo.deleteSessionsOf(db, op.id);
  await audit(db, actor, { action: 'operator.reset', targetType: 'operator', targetId: op.id, detail: { email: op.email } });
  return { email: op.email, setupPath: setupPath(setup) };
}

export async function setOperatorDisabled(db: Queryable, actor: Actor, operatorId: string, disabled: boolean) {
  const op = await repo.findOperator(db, operatorId);
  if (!op) throw notFound('Operator');
  if (actor.operatorId === op.id) throw new AppError('invalid_state_transition', 'You cannot disable yourself');
  await repo.updateOperator(db, op.id, { disabled_at: disabled ? new Date() : null });
  if (disabled) await repo.deleteSessionsOf(db, op.id);
  await audit(db, actor, {
    action: disabled ? 'operator.disabled' : 'operator.enabled',
    targetType: 'operator',
    targetId: op.id,
    detail: { email: op.email },
  });
}

export async function operatorForSetup(db: Queryable, setup: string) {
  if (!TOKEN_SHAPE.test(setup)) return undefined;
  const op = await repo.findOperatorBySetupToken(db, sha256(setup));
  if (!op || !op.setup_expires_at || op.setup_expires_at <= new Date() || op.disabled_at) return undefined;
  return op;
}

/** Uses the setup link once: the password is set and the link is gone. */
export async function completeSetup(db: Queryable, setup: string, password: string) {
  const op = await operatorForSetup(db, setup);
  if (!op) return undefined;
  await repo.updateOperator(db, op.id, { password_hash: await hashPassword(password), setup_token_hash: null, setup_expires_at: null });
  await audit(db, { operatorId: op.id, email: op.email }, { action: 'operator.setup', targetType: 'operator', targetId: op.id });
  return op;
}

export async function startSession(db: Queryable, op: Pick<repo.OperatorRow, 'id'>) {
  const t = token();
  await repo.insertSession(db, {
    id: newId(),
    token_hash: sha256(t),
    operator_id: op.id,
    csrf_token: token(),
    expires_at: new Date(Date.now() + OPS_SESSION_HOURS * 3_600_000),
  });
  return t;
}

export async function sessionFor(db: Queryable, cookie: string): Promise<OpsSession | null> {
  if (!TOKEN_SHAPE.test(cookie)) return null;
  const row = await repo.findSession(db, sha256(cookie));
  if (!row) return null;
  return {
    id: row.id,
    operatorId: row.operator_id,
    email: row.email,
    role: row.role,
    csrfToken: row.csrf_token,
    totpEnabled: row.totp_secret_sealed !== null,
  };
}

export const logout = (db: Queryable, session: OpsSession) => repo.deleteSession(db, session.id);

/** The time step a code matches (±1 step of clock drift), or null. */
function matchingStep(secret: string, code: string): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const delta = totp.checkDelta(code, secret);
  if (delta === null) return null;
  return Math.floor(Date.now() / 1000 / TOTP_STEP_SECONDS) + delta;
}

const totpContext = (operatorId: string) => `ops-totp:${operatorId}`;

export type LoginResult = { ok: true; operator: repo.OperatorRow } | { ok: false; reason: 'credentials' | 'code' };

/**
 * Email, password and, once enrolled, the authenticator's code: all three in one form, one
 * answer for any wrong part of the first two (same time whether the email exists or not).
 * A code is accepted once: the same code again (a replay) is refused.
 */
export async function login(db: Queryable, sealer: Sealer, email: string, password: string, code: string): Promise<LoginResult> {
  const op = await repo.findOperatorByEmail(db, email);
  const ok = op?.password_hash ? await verifyPassword(password, op.password_hash) : await verifyAgainstDummy(password);
  if (!op || !ok || op.disabled_at) return { ok: false, reason: 'credentials' };
  if (op.totp_secret_sealed) {
    const step = matchingStep(sealer.open(op.totp_secret_sealed, totpContext(op.id)), code.replace(/\s/g, ''));
    if (step === null || !(await repo.claimTotpStep(db, op.id, step))) return { ok: false, reason: 'code' };
  }
  return { ok: true, operator: op };
}

/** A new secret to enrol (replacing any earlier unconfirmed one), with its otpauth URI. */
export async function startEnrolment(db: Queryable, sealer: Sealer, session: OpsSession) {
  const secret = totp.generateSecret(20);
  await repo.updateOperator(db, session.operatorId, { totp_pending_sealed: sealer.seal(secret, totpContext(session.operatorId)) });
  return { secret, uri: totp.keyuri(session.email, TOTP_ISSUER, secret) };
}

export async function pendingEnrolment(db: Queryable, sealer: Sealer, session: OpsSession) {
  const op = await repo.findOperator(db, session.operatorId);
  if (!op?.totp_pending_sealed) return null;
  const secret = sealer.open(op.totp_pending_sealed, totpContext(op.id));
  return { secret, uri: totp.keyuri(session.email, TOTP_ISSUER, secret) };
}

/** A code from the pending secret turns the second factor on; false when the code is wrong. */
export async function confirmEnrolment(db: Queryable, sealer: Sealer, session: OpsSession, code: string): Promise<boolean> {
  const op = await repo.findOperator(db, session.operatorId);
  if (!op?.totp_pending_sealed) return false;
  const step = matchingStep(sealer.open(op.totp_pending_sealed, totpContext(op.id)), code.replace(/\s/g, ''));
  if (step === null) return false;
  await repo.updateOperator(db, op.id, {
    totp_secret_sealed: op.totp_pending_sealed,
    totp_pending_sealed: null,
    totp_last_step: String(step),
  });
  await audit(db, session, { action: 'operator.totp_enabled', targetType: 'operator', targetId: op.id });
  return true;
}

// Audit export ---------------------------------------------------------------------------------

const AUDIT_COLUMNS = [
  'at',
  'operator_email',
  'action',
  'target_type',
  'target_id',
  'tenant_id',
  'environment',
  'reason',
  'detail',
] as const;

/**
 * RFC 4180 quoting, and a leading apostrophe on text a spreadsheet would run as a formula
 * (=, +, -, @, tab, CR): reasons and details are typed by people and businesses.
 */
export function csvCell(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) && !/^-?\d/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function auditCsv(rows: repo.AuditRow[]): string {
  const line = (r: repo.AuditRow) =>
    [
      r.at.toISOString(),
      r.operator_email,
      r.action,
      r.target_type,
      r.target_id,
      r.tenant_id,
      r.environment,
      r.reason,
      JSON.stringify(r.detail),
    ]
      .map(csvCell)
      .join(',');
  return [AUDIT_COLUMNS.join(','), ...rows.map(line)].join('\r\n') + '\r\n';
}
