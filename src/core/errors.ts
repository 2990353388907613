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

/**
 * One default message per code: an error raised without a message of its own says this, so a code
 * reads the same wherever it comes from. A message that needs the request's values (an amount, a
 * currency, a field) is passed explicitly, through a small factory of the module that raises it.
 */
export const ERROR_MESSAGES: Record<ErrorCode, string> = {
  bad_request: 'The request could not be processed',
  validation_failed: 'The request has invalid fields',
  invalid_json: 'The body is not valid JSON',
  invalid_amount: 'The amount is not a valid amount for its currency',
  missing_idempotency_key: 'POST requests need an Idempotency-Key header',
  invalid_idempotency_key: 'Idempotency-Key must be 1-255 printable ASCII characters',
  missing_client_public_key: 'This request needs the business public key in its header',
  invalid_client_public_key: 'The public key does not belong to this business and environment',
  missing_api_key: 'Send your API key in the Api-Key header',
  invalid_api_key: 'The API key is not valid',
  expired_api_key: 'The API key has expired',
  unauthorized: 'Log in first',
  secret_key_required: 'This operation needs a secret key (sk_…); public keys only read reference data',
  tenant_mismatch: 'x-tenant-id does not match the business of the API key',
  live_access_frozen: "This business's live API access is frozen by the platform operator; contact support",
  https_required: 'Use HTTPS',
  feature_not_active: 'The feature is not active for this customer',
  kyc_level_insufficient: "The customer's KYC level does not allow this",
  forbidden: 'Your role does not allow this',
  csrf_failed: 'The form expired or did not come from this site; reload the page and try again',
  not_found: 'Resource not found',
  method_not_allowed: 'The method is not allowed on this route',
  account_frozen: 'The account is frozen',
  account_inactive: 'The account is not active',
  card_blocked: 'The card cannot be used',
  quote_expired: 'This quote has expired; request a new one',
  quote_used: 'This quote was already used',
  customer_exists: 'A customer with these details already exists',
  kyc_already_completed: 'KYC is already complete for this customer',
  invalid_state_transition: 'The resource cannot make this change in its current state',
  conflict: 'The resource already exists',
  idempotency_request_in_progress: 'A request with this Idempotency-Key is still in progress; retry shortly',
  missing_documents: 'Required documents have not been uploaded for this customer',
  payload_too_large: 'The body is too large',
  unsupported_media_type: 'The body must be application/json',
  idempotency_key_reused: 'This Idempotency-Key was used for a different request',
  insufficient_funds: 'The available balance is too low for this amount',
  limit_exceeded: 'The amount is above the limit',
  currency_mismatch: 'The currencies do not match',
  unprocessable: 'The request cannot be carried out',
  rate_limited: 'Too many requests; retry after Retry-After',
  internal_error: 'Something went wrong on our side',
  service_unavailable: 'The service is briefly unavailable, retry shortly',
};

export interface ErrorDetail {
  field: string;
  code: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string = ERROR_MESSAGES[code],
    readonly details: ErrorDetail[] = [],
    /** Extra response headers (Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (what = 'Resource', details: ErrorDetail[] = []) => new AppError('not_found', `${what} not found`, details);

export function validationError(details: ErrorDetail[], message = 'The request has invalid fields'): AppError {
  return new AppError('validation_failed', message, details);
}

/**
 * What a batch's work returns per item: its data, or the error that item alone gets. `eventId`: an
 * event written in the same transaction whose data is `data` (a transfer's own event), which the
 * Idempotency-Key record then points at instead of storing the answer again.
 */
export type ItemOutcome<T> = { ok: true; data: T; eventId?: string } | { ok: false; error: AppError };

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
