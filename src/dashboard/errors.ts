import { AppError } from '../core/errors.js';

/** A dashboard form's choice is missing or not one of its options: one phrasing for bad_request. */
export const mustChoose = (what: string) => new AppError('bad_request', `Choose ${what}`);
