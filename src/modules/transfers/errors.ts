import { AppError } from '../../core/errors.js';
import type { PostRefusal } from '../../ledger/index.js';

/**
 * The ledger's refusals (typed results, never exceptions) as the API's errors: the one place
 * where "insufficient funds on account X" becomes 422 insufficient_funds for every transfer path.
 */
export function refusalError(refusal: PostRefusal): AppError {
  switch (refusal.reason) {
    case 'insufficient_funds':
      return new AppError('insufficient_funds', undefined, [
        { field: 'amount', code: 'insufficient_funds', message: 'Amount plus fee exceeds the available balance' },
      ]);
  }
}

/**
 * The one phrasing of currency_mismatch on a transfer: what `holder` (the source account, the
 * destination account, the card) holds, and the source account's currency when that is the other side.
 */
export function currencyMismatch(field: string, holder: string, currency: string, sourceCurrency?: string): AppError {
  const message = `The ${holder} holds ${currency}${sourceCurrency ? `, the source account ${sourceCurrency}` : ''}`;
  return new AppError('currency_mismatch', message, [{ field, code: 'currency_mismatch', message }]);
}

/** The one phrasing of invalid_state_transition on a transfer: `A settled transfer cannot be cancelled`. */
export const invalidTransition = (status: string, action: string): AppError =>
  new AppError('invalid_state_transition', `A ${status} transfer cannot be ${action}`);
