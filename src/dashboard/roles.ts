import { AppError } from '../core/errors.js';

/** Dashboard roles, most powerful first. */
export const ROLES = ['owner', 'admin', 'developer', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What each role may do. Reading the business's data is open to every role; everything else is
 * listed here and checked on the server for every request (hiding a button is only a courtesy).
 * - keys: see and rotate API keys (owner, admin)
 * - settings: change the business's dashboard settings, such as the request log's retention (owner, admin)
 * - team: invite and remove members, change their roles, hand out reset links, read the audit log
 *   (owner, admin; only owners touch owners, and the last owner stays an owner)
 * - webhooks: add, change, delete endpoints, rotate their secrets, resend, send test events
 *   (owner, admin, developer)
 * - approvals: approve or reject requests waiting for a second person (maker-checker: FX orders,
 *   payouts above a threshold, new payees) and change when approval is needed (owner, admin)
 */
const RULES = {
  keys: ['owner', 'admin'],
  settings: ['owner', 'admin'],
  team: ['owner', 'admin'],
  webhooks: ['owner', 'admin', 'developer'],
  approvals: ['owner', 'admin'],
} as const satisfies Record<string, readonly Role[]>;
export type Permission = keyof typeof RULES;

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function can(role: Role, permission: Permission): boolean {
  return (RULES[permission] as readonly Role[]).includes(role);
}

export function requirePermission(role: Role, permission: Permission): void {
  if (!can(role, permission)) {
    throw new AppError('forbidden', `Your role (${role}) does not allow this. Ask an owner or admin of the business.`);
  }
}

/** Roles a member with `role` may hand out: an admin cannot make owners. */
export function grantableRoles(role: Role): Role[] {
  if (role === 'owner') return [...ROLES];
  if (role === 'admin') return ['admin', 'developer', 'viewer'];
  return [];
}
