import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { AppError, validationError } from '../../http/errors.js';
import { parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import { requireCustomer } from '../customers/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/outbox.js';
import { computeFee } from './fees.js';
import { assertCustomerMayMove } from './limits.js';
import * as repo from './repo.js';
import type { CreateTransferBody } from './schema.js';
import { toTransferResponse } from './format.js';

/** Source and destination accounts, share-locked, with every check a client can fail. */
async function loadAccounts(trx: Trx, ctx: RequestContext, body: CreateTransferBody) {
  const destinationId = body.destination.id;
  if (!destinationId) throw validationError([{ field: 'destination.id', code: 'required', message: 'Required' }]);
  if (destinationId === body.source.id) {
    throw validationError([{ field: 'destination.id', code: 'invalid', message: 'Source and destination must differ' }]);
  }
  const locked = await accounts.lockForMovement(trx, ctx, [body.source.id, destinationId]);
  const source = locked.get(body.source.id);
  if (!source) throw new AppError('not_found', 'Source account not found', [{ field: 'source.id', code: 'not_found', message: 'No such account' }]);
  const destination = locked.get(destinationId);
  if (!destination) throw new AppError('not_found', 'Destination account not found', [{ field: 'destination.id', code: 'not_found', message: 'No such account' }]);
  if (body.customer_id) {
    await requireCustomer(trx, ctx, body.customer_id);
    if (source.customer_id !== body.customer_id) {
      throw validationError([{ field: 'customer_id', code: 'mismatch', message: 'The source account does not belong to this customer' }]);
    }
  }
  return { source, destination };
}

function currencyMismatch(field: string, message: string) {
  return new AppError('currency_mismatch', message, [{ field, code: 'currency_mismatch', message }]);
}

/** Posts amount + fee; an overdraft becomes 422 insufficient_funds naming the amount. */
async function postTransfer(trx: Trx, ctx: RequestContext, id: string, legs: ledger.Leg[]) {
  try {
    return await ledger.post(trx, ctx, { kind: 'internal_transfer', reference: id, metadata: { transfer_id: id }, legs });
  } catch (err) {
    if (err instanceof AppError && err.code === 'insufficient_funds') {
      throw new AppError('insufficient_funds', 'The source account has insufficient available balance', [
        { field: 'amount', code: 'insufficient_funds', message: 'Amount plus fee exceeds the available balance' },
      ]);
    }
    throw err;
  }
}

interface Movement {
  id: string;
  body: CreateTransferBody;
  source: accounts.AccountRow;
  destination: accounts.AccountRow;
  feeAccount: accounts.AccountRow | undefined;
  amount: bigint;
  fee: bigint;
  posting: ledger.PostedTransaction;
}

/** One transaction per account touched: source (out, with the fee), destination (in), fee account (in). */
async function recordTransactions(trx: Trx, ctx: RequestContext, m: Movement) {
  const currency = m.source.currency;
  const description = m.body.description ?? '';
  const common = { currency, channel: 'internal' as const, sendingAccountId: m.source.id, receivingAccountId: m.destination.id, description };
  const sides: transactions.AccountSide[] = [
    { ...common, accountId: m.source.id, customerId: m.source.customer_id, direction: 'out', amount: m.amount, fee: m.fee, transactionType: 'internal_transfer' },
    { ...common, accountId: m.destination.id, customerId: m.destination.customer_id, direction: 'in', amount: m.amount, transactionType: 'internal_transfer' },
  ];
  if (m.feeAccount) {
    sides.push({ ...common, accountId: m.feeAccount.id, customerId: null, direction: 'in', amount: m.fee, transactionType: 'fee_charge', receivingAccountId: m.feeAccount.id, description: 'Transfer fee' });
  }
  const [sourceTx] = await transactions.recordMovement(trx, ctx, {
    reference: m.id,
    clientReference: m.body.client_reference ?? null,
    clientMetadata: m.body.metadata ? JSON.stringify(m.body.metadata) : null,
    posting: m.posting,
    sides,
  });
  return sourceTx!.id;
}

function transferRow(ctx: RequestContext, m: Movement, transactionId: string): repo.TransferRow {
  const now = new Date();
  return {
    id: m.id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    reference: m.id,
    client_reference: m.body.client_reference ?? null,
    description: m.body.description ?? '',
    customer_id: m.source.customer_id,
    destination_customer_id: m.destination.customer_id,
    source_type: 'internal_account',
    source_id: m.source.id,
    destination_type: m.body.destination.destination_type,
    destination_id: m.destination.id,
    rail: null,
    currency: m.source.currency,
    amount: m.amount,
    fee: m.fee,
    local_amount: m.amount,
    local_currency: m.source.currency,
    rate: null,
    status: 'completed',
    failure_reason: null,
    ledger_transaction_id: m.posting.id,
    transaction_id: transactionId,
    hold_id: null,
    metadata: m.body.metadata ?? {},
    created_at: now,
    updated_at: now,
  };
}

/**
 * An internal transfer between two accounts of the business, complete at once: source pays
 * amount + fee, destination receives amount, the business's own account receives the fee.
 */
export async function internalTransfer(trx: Trx, ctx: RequestContext, config: Config, id: string, body: CreateTransferBody): Promise<repo.TransferRow> {
  const { source, destination } = await loadAccounts(trx, ctx, body);
  const currency = source.currency;
  const amount = parseAmount(body.amount, currency);
  if (body.currency && body.currency !== currency) throw currencyMismatch('currency', `The source account holds ${currency}`);
  if (destination.currency !== currency) {
    throw currencyMismatch('destination.id', `The destination account holds ${destination.currency}, the source ${currency}`);
  }
  accounts.assertCanDebit(source);
  accounts.assertCanCredit(destination);
  await assertCustomerMayMove(trx, ctx, config, { customerId: source.customer_id, currency, amount });

  const fee = computeFee(ctx.settings, 'internal_transfer', currency, amount);
  const feeAccount = fee > 0n ? await accounts.businessFeeAccount(trx, ctx, currency) : undefined;
  const legs: ledger.Leg[] = [
    { accountId: source.id, amount: -(amount + fee), currency },
    { accountId: destination.id, amount, currency },
  ];
  if (feeAccount) legs.push({ accountId: feeAccount.id, amount: fee, currency });
  const posting = await postTransfer(trx, ctx, id, legs);
  const movement: Movement = { id, body, source, destination, feeAccount, amount, fee, posting };
  const row = transferRow(ctx, movement, await recordTransactions(trx, ctx, movement));
  await repo.insertTransfer(trx, { ...row, metadata: JSON.stringify(row.metadata) });
  await recordEvent(trx, ctx, 'transfer.status.completed', toTransferResponse(row));
  return row;
}
