import type { BusinessSettings } from './settings.js';

export type Environment = 'sandbox' | 'live';

/** Whose data: every query of a business's rows is filtered by both. */
export interface Scope {
  tenantId: string;
  environment: Environment;
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
    }
  | { ok: false; reason: 'invalid' | 'expired' };
