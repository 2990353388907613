import type { BusinessSettings } from './settings.js';

export type Environment = 'sandbox' | 'live';

/** Whose data: every query of a business's rows is filtered by both. */
export interface Scope {
  tenantId: string;
  environment: Environment;
}

/** A scope as a map key: batches group their work by business and environment. */
export const scopeKey = (scope: Scope) => `${scope.tenantId}:${scope.environment}`;

/**
 * The one scope every item of a batch shares, or undefined (no items, or several businesses or
 * environments): a batch plans its first statements ahead only within one business.
 */
export function soleScope<C extends Scope>(items: readonly { ctx: C }[]): C | undefined {
  const ctx = items[0]?.ctx;
  return ctx && items.every((item) => scopeKey(item.ctx) === scopeKey(ctx)) ? ctx : undefined;
}

/**
 * Values grouped by the scope they belong to, in key order: a batch sends one statement per
 * business and environment, always in the same order.
 */
export function groupByScope<T>(items: { ctx: Scope; values: T[] }[]): { key: string; ctx: Scope; values: T[] }[] {
  const groups = new Map<string, { key: string; ctx: Scope; values: T[] }>();
  for (const { ctx, values } of items) {
    const key = scopeKey(ctx);
    const group = groups.get(key) ?? { key, ctx, values: [] };
    group.values.push(...values);
    groups.set(key, group);
  }
  return [...groups.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Who is asking: set by auth on every /v1 request and passed to every service and repo. */
export interface RequestContext extends Scope {
  keyKind: 'secret' | 'public';
  requestId: string;
  /** The business's settings (fees, limits, quotas), loaded and parsed with the key. */
  settings: BusinessSettings;
}

/** What an API key resolves to: the business, environment and kind it opens, or why it opens nothing. */
export type KeyLookup =
  | {
      ok: true;
      tenantId: string;
      environment: Environment;
      kind: 'secret' | 'public';
      settings: BusinessSettings;
      expiresAt: Date | null;
      /** A live key of a business whose live access an operator froze. */
      liveFrozen?: boolean;
    }
  | { ok: false; reason: 'invalid' | 'expired' };
