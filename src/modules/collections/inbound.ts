import type { Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { notFound } from '../../core/errors.js';
import { newId } from '../../lib/ids.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { lockInboundCollection, settleInboundTransfer } from './lifecycle.js';
import type { CollectionDeps } from './service.js';

export interface InboundCredit {
  /** The amount in minor units, or how to read it once the account's currency is known. */
  amount: bigint | ((currency: string) => bigint);
  /** What the payer quoted: a pending bank-transfer collection with this reference completes. */
  reference: string | null;
  description: string;
  metadata: Record<string, unknown>;
}

/**
 * An inbound bank transfer credits an account, from the settlement system account: the sandbox
 * fund simulation and the bank's camt files book money arriving by this one path (the account's
 * transaction, and a pending bank-transfer collection the payment names completes with its event).
 */
export async function creditInbound(trx: Trx, ctx: Scope, accountId: string, credit: InboundCredit, collections?: CollectionDeps) {
  // A pending collection this payment names is locked before anything else (lifecycle.ts).
  const collection = credit.reference && collections ? await lockInboundCollection(trx, ctx, accountId, credit.reference) : undefined;
  const account = (await accounts.lockForMovement(trx, ctx, [accountId])).get(accountId);
  if (!account) throw notFound('Account');
  const amount = typeof credit.amount === 'function' ? credit.amount(account.currency) : credit.amount;
  accounts.assertCanCredit(account, 'account_id');
  const settlement = await ledger.systemAccount(trx, ctx, 'settlement', account.currency);
  const reference = newId();
  const posting = await ledger.post(trx, ctx, {
    kind: 'funding',
    reference,
    metadata: { ...credit.metadata, client_reference: credit.reference },
    legs: [
      { accountId: settlement, amount: -amount, currency: account.currency },
      { accountId: account.id, amount, currency: account.currency },
    ],
  });
  const [row] = await transactions.recordMovement(trx, ctx, {
    reference,
    clientReference: credit.reference,
    posting,
    sides: [
      {
        accountId: account.id,
        customerId: account.customer_id,
        direction: 'in',
        amount,
        currency: account.currency,
        channel: 'bank_transfer',
        transactionType: 'account_funding',
        description: credit.description,
        receivingAccountId: account.id,
      },
    ],
  });
  // An inbound payment quoting a pending bank-transfer collection's reference completes it.
  if (collection && collections) {
    await settleInboundTransfer(trx, ctx, collections, collection, { amount, transactionId: row!.id, ledgerTransactionId: posting.id });
  }
  return row!;
}
