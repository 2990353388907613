/**
 * The one error type. Every failure a client can see is an AppError with a code from this closed
 * list. Which HTTP status a code gets is the HTTP layer's business (`http/errors.ts` holds that
 * table), so the ledger, the rails and the services raise errors without knowing about HTTP.
 */
export const ERROR_CODES = [
  'bad_request',
  'validation_failed',
  'invalid_json',
  'invalid_amount',
  'missing_idempotency_key',
  'invalid_idempotency_key',
  'missing_client_public_key',
  'invalid_client_public_key',
  'missing_api_key',
  'invalid_api_key',
  'expired_api_key',
  'unauthorized',
  'secret_key_required',
  'tenant_mismatch',
  'live_access_frozen',
  'https_required',
  'feature_not_active',
  'kyc_level_insufficient',
  'forbidden',
  'csrf_failed',
  'not_found',
  'method_not_allowed',
  'account_frozen',
  'account_inactive',
  'card_blocked',
  'quote_expired',
  'quote_used',
  'customer_exists',
  'kyc_already_completed',
  'invalid_state_transition',
  'conflict',
  'idempotency_request_in_progress',
  'missing_documents',
  'payload_too_large',
  'unsupported_media_type',
  'idempotency_key_reused',
  'insufficient_funds',
  'limit_exceeded',
  'currency_mismatch',
  'unprocessable',
  'rate_limited',
  'internal_error',
  'service_unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  field: string;
  code: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetail[] = [],
    /** Extra response headers (Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (what = 'Resource') => new AppError('not_found', `${what} not found`);

export function validationError(details: ErrorDetail[], message = 'The request has invalid fields'): AppError {
  return new AppError('validation_failed', message, details);
}

/** What a batch's work returns per item: its data, or the error that item alone gets. */
export type ItemOutcome<T> = { ok: true; data: T } | { ok: false; error: AppError };

/**
 * Runs `fn`, returning a client error (AppError) as a value instead of throwing it: a batch makes
 * it that item's outcome. Anything else is a fault and propagates.
 */
export async function refusalOf<T>(fn: () => Promise<T> | T): Promise<T | AppError> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
}
