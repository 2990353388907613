import { AppError, type ErrorCode } from '../src/core/errors.js';
import { statusOf } from '../src/http/errors.js';

/** An AppError with this code, answered with this HTTP status. */
export function isError(code: ErrorCode, status: number) {
  return (err: unknown) => err instanceof AppError && err.code === code && statusOf(err) === status;
}
