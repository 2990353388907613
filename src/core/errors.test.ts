import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AppError, ERROR_CODES, ERROR_MESSAGES } from './errors.js';

/** Every `.ts` file under `dir`, tests beside the code left out. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [join(dir, e.name)] : [],
  );
}

describe('one default message per error code', () => {
  it('has a message for every code, used when an error is raised without one', () => {
    for (const code of ERROR_CODES) expect(ERROR_MESSAGES[code], code).toMatch(/\S/);
    expect(new AppError('insufficient_funds').message).toBe(ERROR_MESSAGES.insufficient_funds);
    expect(new AppError('not_found', 'Card not found').message).toBe('Card not found');
  });

  it('raises these codes with their one message, never a text of their own', () => {
    const single = [
      'insufficient_funds',
      'idempotency_key_reused',
      'internal_error',
      'quote_expired',
      'quote_used',
      'missing_api_key',
      'invalid_api_key',
      'expired_api_key',
      'tenant_mismatch',
      'live_access_frozen',
      'secret_key_required',
      'https_required',
      'csrf_failed',
      'invalid_json',
      'unsupported_media_type',
      'missing_idempotency_key',
      'invalid_idempotency_key',
      'missing_documents',
      'account_frozen',
    ];
    const root = new URL('..', import.meta.url).pathname;
    const own = sources(root).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/new AppError\(\s*'([a-z_]+)',\s*['`]/g)]
        .filter((m) => single.includes(m[1]!))
        .map((m) => `${file.slice(root.length)}: ${m[1]}`),
    );
    expect(own).toEqual([]);
  });
});
