import { AppError, type ErrorDetail } from '../../core/errors.js';

/** A card in a final status (blocked, lost, stolen, expired): the one phrasing of card_blocked. */
export const cardBlocked = (status: string, details: ErrorDetail[] = []) =>
  new AppError('card_blocked', `The card is ${status}; that is final`, details);
