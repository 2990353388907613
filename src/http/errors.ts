import { AppError, type ErrorCode } from '../core/errors.js';

/**
 * Code → HTTP status: the one table that decides the status of every error answer. Typed as a
 * record over every code, so a new code without a status fails the type check.
 */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  bad_request: 400,
  validation_failed: 400,
  invalid_json: 400,
  invalid_amount: 400,
  missing_idempotency_key: 400,
  invalid_idempotency_key: 400,
  missing_client_public_key: 400,
  invalid_client_public_key: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  expired_api_key: 401,
  unauthorized: 401,
  secret_key_required: 403,
  tenant_mismatch: 403,
  live_access_frozen: 403,
  https_required: 403,
  feature_not_active: 403,
  kyc_level_insufficient: 403,
  forbidden: 403,
  csrf_failed: 403,
  not_found: 404,
  method_not_allowed: 405,
  account_frozen: 409,
  account_inactive: 409,
  card_blocked: 409,
  quote_expired: 409,
  quote_used: 409,
  customer_exists: 409,
  kyc_already_completed: 409,
  invalid_state_transition: 409,
  conflict: 409,
  idempotency_request_in_progress: 409,
  missing_documents: 412,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  insufficient_funds: 422,
  limit_exceeded: 422,
  currency_mismatch: 422,
  unprocessable: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
};

/** The HTTP status of an error answer. */
export function statusOf(err: AppError): number {
  return ERROR_STATUS[err.code];
}
