import { AppError, type ErrorDetail } from '../../core/errors.js';

/** The customer errors whose message carries the request's values: one phrasing per code. */
export const customerExists = (field: string, details: ErrorDetail[] = []) =>
  new AppError('customer_exists', `A customer with this ${field} already exists`, details);
