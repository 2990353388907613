import type { Trx } from '../../db/client.js';
import { validationError } from '../../core/errors.js';
import { parseAmount } from '../../lib/money.js';
import type * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as cards from '../cards/service.js';
import type * as transactions from '../transactions/service.js';
import { computeFee } from '../pricing/service.js';
import { currencyMismatch } from './errors.js';
import { baseTransferRow, lockedSource, movementRecordOf, type MovementRequest, type Prepared } from './internal.js';
import type * as repo from './repo.js';

/**
 * Card funding: an account of the card's owner (or of the business) moves money onto the card's
 * own balance, complete at once. It is one kind of the batch posting path (batch.ts), beside
 * internal transfers: these are its steps that differ (checks, account transactions, transfer
 * row, its extra event). Card funding has no KYC limit of its own but counts in the customer's
 * daily total (the batch adds it to the counter without checking the limit).
 */
export interface CardFunding extends Prepared {
  kind: 'card_funding';
  card: Awaited<ReturnType<typeof cards.cardForFunding>>;
}

export const isCardFunding = (p: Prepared): p is CardFunding => p.kind === 'card_funding';

/**
 * Every check a client can fail, against the share-locked source row. The card row is read, not
 * locked (see cards.cardForFunding).
 */
export async function prepareFunding(
  trx: Trx,
  req: MovementRequest,
  id: string,
  locked: Map<string, accounts.MovementAccountRow>,
): Promise<CardFunding> {
  const { ctx, body } = req;
  const source = lockedSource(body, locked);
  const card = await cards.cardForFunding(trx, ctx, body.destination.id!);
  if (body.customer_id && body.customer_id !== source.customer_id) {
    throw validationError([{ field: 'customer_id', code: 'mismatch', message: 'The source account does not belong to this customer' }]);
  }
  if (source.customer_id !== null && source.customer_id !== card.customer_id) {
    throw validationError([
      { field: 'destination.id', code: 'mismatch', message: "A card is funded from its owner's or the business's account" },
    ]);
  }
  if ((body.currency && body.currency !== source.currency) || card.currency !== source.currency) {
    throw currencyMismatch('destination.id', 'card', card.currency, source.currency);
  }
  const currency = card.currency;
  const amount = parseAmount(body.amount, currency);
  accounts.assertCanDebit(source);
  const fee = computeFee(ctx.settings, 'card_funding', currency, amount);
  return {
    req,
    id,
    kind: 'card_funding',
    source,
    destination: { id: card.id, customer_id: card.customer_id },
    card,
    currency,
    amount,
    fee,
  };
}

/** Source (out, with the fee), card (in), fee account (in). */
export function fundingMovement(p: CardFunding, posting: ledger.PostedTransaction): transactions.MovementRecord {
  const { body } = p.req;
  const common = {
    currency: p.currency,
    channel: 'card_funding' as const,
    transactionType: 'card_funding' as const,
    sendingAccountId: p.source.id,
    receivingAccountId: p.card.id,
    cardId: p.card.id,
    description: body.description ?? 'Card funding',
    metadata: { card_id: p.card.id, card_type: p.card.card_type },
  };
  const sides: transactions.AccountSide[] = [
    { ...common, accountId: p.source.id, customerId: p.source.customer_id, direction: 'out', amount: p.amount, fee: p.fee },
    { ...common, accountId: p.card.id, customerId: p.card.customer_id, direction: 'in', amount: p.amount },
  ];
  if (p.feeAccount && p.fee > 0n) {
    sides.push({
      ...common,
      accountId: p.feeAccount.id,
      customerId: null,
      direction: 'in',
      amount: p.fee,
      transactionType: 'fee_charge',
      channel: 'internal',
      receivingAccountId: p.feeAccount.id,
      description: 'Card funding fee',
    });
  }
  return movementRecordOf(p, sides, posting);
}

export function fundingRow(p: CardFunding, posting: ledger.PostedTransaction, transactionId: string): repo.TransferRow {
  return { ...baseTransferRow(p, transactionId), description: p.req.body.description ?? 'Card funding', ledger_transaction_id: posting.id };
}

/** The card's own event: its funding transaction, as card transactions are shown. */
export function fundingEvent(p: CardFunding, cardTx: transactions.TransactionRow) {
  return { ...cards.cardTransactionEvent(cardTx, p.card), transfer_id: p.id };
}
