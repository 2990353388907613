import { AppError } from '../core/errors.js';

/** Operator roles: the platform's staff, never a business's users. */
export const OPS_ROLES = ['compliance', 'operations', 'admin', 'viewer'] as const;
export type OpsRole = (typeof OPS_ROLES)[number];

/**
 * What each role may do, checked on the server for every request (hidden links are a courtesy):
 * - kyc.read: the review queue and case pages without the documents (every role)
 * - kyc.documents: open a customer's identity documents (compliance, admin)
 * - kyc.decide: approve, reject, request documents (compliance, admin)
 * - payouts.read / payouts.decide: live payouts; settle, fail or return by hand (operations, admin decide)
 * - bank.read / bank.act: bank connections, files, exceptions, reconciliations; resolve exceptions
 *   and run an exchange now (operations, admin act)
 * - businesses.read / businesses.edit: every business; settings and the live freeze (admin edits)
 * - operators: add operators, disable them, hand out setup links (admin)
 * - audit: read and export the audit log (every role)
 */
const RULES = {
  'kyc.read': ['compliance', 'operations', 'admin', 'viewer'],
  'kyc.documents': ['compliance', 'admin'],
  'kyc.decide': ['compliance', 'admin'],
  'payouts.read': ['compliance', 'operations', 'admin', 'viewer'],
  'payouts.decide': ['operations', 'admin'],
  'bank.read': ['compliance', 'operations', 'admin', 'viewer'],
  'bank.act': ['operations', 'admin'],
  'businesses.read': ['compliance', 'operations', 'admin', 'viewer'],
  'businesses.edit': ['admin'],
  operators: ['admin'],
  audit: ['compliance', 'operations', 'admin', 'viewer'],
} as const satisfies Record<string, readonly OpsRole[]>;
export type OpsPermission = keyof typeof RULES;

export function isOpsRole(value: unknown): value is OpsRole {
  return typeof value === 'string' && (OPS_ROLES as readonly string[]).includes(value);
}

export function opsCan(role: OpsRole, permission: OpsPermission): boolean {
  return (RULES[permission] as readonly OpsRole[]).includes(role);
}

export function requireOps(role: OpsRole, permission: OpsPermission): void {
  if (!opsCan(role, permission)) throw new AppError('forbidden', `Your role (${role}) does not allow this.`);
}
