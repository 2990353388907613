import type { Trx } from '../../db/client.js';
import { WriteSet } from '../../db/write-set.js';
import type { RequestContext } from '../../core/context.js';
import { AppError, validationError } from '../../core/errors.js';
import { parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as cards from '../cards/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import { computeFee } from '../pricing/service.js';
import { refusalError } from './errors.js';
import { countSpend } from './limits.js';
import { toTransferResponse } from './format.js';
import * as repo from './repo.js';
import type { CreateTransferBody } from './schema.js';

/**
 * Card funding: an account of the card's owner (or of the business) moves money onto the card's
 * own balance, complete at once. Locks: the source account (shared) and the ledger balances; the
 * card row is read, not locked (see cards.cardForFunding). Every write (ledger, counter, account
 * transactions, transfer, events) goes as one statement at the end (db/write-set.ts).
 */
export async function cardFunding(trx: Trx, ctx: RequestContext, id: string, body: CreateTransferBody): Promise<repo.TransferRow> {
  const { source, card } = await loadFunding(trx, ctx, body);
  const currency = card.currency;
  const amount = parseAmount(body.amount, currency);
  accounts.assertCanDebit(source);
  const fee = computeFee(ctx.settings, 'card_funding', currency, amount);
  const feeAccount = fee > 0n ? await accounts.businessFeeAccount(trx, ctx, currency) : undefined;
  const legs: ledger.Leg[] = [
    { accountId: source.id, amount: -(amount + fee), currency },
    { accountId: card.id, amount, currency },
  ];
  if (feeAccount) legs.push({ accountId: feeAccount.id, amount: fee, currency });
  const writes = new WriteSet(trx);
  const posting = await postFunding(trx, writes, ctx, id, card.id, legs);
  // Card funding has no KYC limit of its own but counts in the customer's daily total.
  await countSpend(writes, ctx, source.customer_id, currency, amount);

  const description = body.description ?? 'Card funding';
  const metadata = { card_id: card.id, card_type: card.card_type };
  const common = {
    currency,
    channel: 'card_funding' as const,
    transactionType: 'card_funding' as const,
    sendingAccountId: source.id,
    receivingAccountId: card.id,
    cardId: card.id,
    description,
    metadata,
  };
  const sides: transactions.AccountSide[] = [
    { ...common, accountId: source.id, customerId: source.customer_id, direction: 'out', amount, fee },
    { ...common, accountId: card.id, customerId: card.customer_id, direction: 'in', amount },
  ];
  if (feeAccount) {
    sides.push({
      ...common,
      accountId: feeAccount.id,
      customerId: null,
      direction: 'in',
      amount: fee,
      transactionType: 'fee_charge',
      channel: 'internal',
      receivingAccountId: feeAccount.id,
      description: 'Card funding fee',
    });
  }
  const [sourceTx, cardTx] = await transactions.recordMovement(writes, ctx, {
    reference: id,
    clientReference: body.client_reference ?? null,
    clientMetadata: body.metadata ? JSON.stringify(body.metadata) : null,
    posting,
    sides,
  });
  const row = fundingRow(ctx, id, body, { source, card, amount, fee, description, ledgerId: posting.id, transactionId: sourceTx!.id });
  await repo.insertTransfer(writes, { ...row, metadata: JSON.stringify(row.metadata) });
  await recordEvent(writes, ctx, 'transfer.status.completed', toTransferResponse(row));
  const funding = { ...cards.cardTransactionEvent(cardTx!, card), transfer_id: id };
  await recordEvent(writes, ctx, 'cards.transaction.funding', funding, card.id);
  await writes.flush();
  return row;
}

/** The source account (share-locked) and the card, with every check a client can fail. */
async function loadFunding(trx: Trx, ctx: RequestContext, body: CreateTransferBody) {
  const cardId = body.destination.id;
  if (!cardId) throw validationError([{ field: 'destination.id', code: 'required', message: 'Required: the card id' }]);
  const source = (await accounts.lockForMovement(trx, ctx, [body.source.id])).get(body.source.id);
  if (!source)
    throw new AppError('not_found', 'Source account not found', [{ field: 'source.id', code: 'not_found', message: 'No such account' }]);
  const card = await cards.cardForFunding(trx, ctx, cardId);
  if (body.customer_id && body.customer_id !== source.customer_id) {
    throw validationError([{ field: 'customer_id', code: 'mismatch', message: 'The source account does not belong to this customer' }]);
  }
  if (source.customer_id !== null && source.customer_id !== card.customer_id) {
    throw validationError([
      { field: 'destination.id', code: 'mismatch', message: "A card is funded from its owner's or the business's account" },
    ]);
  }
  if ((body.currency && body.currency !== source.currency) || card.currency !== source.currency) {
    const message = `The card holds ${card.currency}, the source account ${source.currency}`;
    throw new AppError('currency_mismatch', message, [{ field: 'destination.id', code: 'currency_mismatch', message }]);
  }
  return { source, card };
}

/** Posts amount + fee; an overdraft is the ledger's typed refusal, mapped in one place. */
async function postFunding(trx: Trx, writes: WriteSet, ctx: RequestContext, id: string, cardId: string, legs: ledger.Leg[]) {
  const result = await ledger.tryPost(
    trx,
    ctx,
    {
      kind: 'card_funding',
      reference: id,
      metadata: { transfer_id: id, card_id: cardId },
      legs,
    },
    writes,
  );
  if (!result.ok) throw refusalError(result);
  return result.posting;
}

interface Funding {
  source: accounts.AccountRow;
  card: { id: string; customer_id: string; currency: string };
  amount: bigint;
  fee: bigint;
  description: string;
  ledgerId: string;
  transactionId: string;
}

function fundingRow(ctx: RequestContext, id: string, body: CreateTransferBody, f: Funding): repo.TransferRow {
  const now = new Date();
  return {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    reference: id,
    client_reference: body.client_reference ?? null,
    description: f.description,
    customer_id: f.source.customer_id,
    destination_customer_id: f.card.customer_id,
    source_type: 'internal_account',
    source_id: f.source.id,
    destination_type: 'card',
    destination_id: f.card.id,
    rail: null,
    currency: f.card.currency,
    amount: f.amount,
    fee: f.fee,
    local_amount: f.amount,
    local_currency: f.card.currency,
    rate: null,
    status: 'completed',
    failure_reason: null,
    ledger_transaction_id: f.ledgerId,
    transaction_id: f.transactionId,
    hold_id: null,
    metadata: body.metadata ?? {},
    created_at: now,
    updated_at: now,
  };
}
