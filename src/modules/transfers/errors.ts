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
