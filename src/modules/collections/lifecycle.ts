import type { Trx } from '../../db/client.js';
import { inOneStatement, type WriteSet } from '../../db/write-set.js';
import type { Environment, RequestContext } from '../../core/context.js';
import { AppError, notFound } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import { settingsOf } from '../tenants/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import * as repo from './repo.js';
import { collectionFee, toResponse, type CollectionDeps } from './service.js';

/**
 * A collection's outcomes: pending -> completed (money settles into the destination account,
 * less the business's fee) | failed | expired. Each is a conditional update on the locked row,
 * written with its ledger posting and event in one transaction, so it happens exactly once.
 */
type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;
type Deps = Pick<CollectionDeps, 'sealer' | 'baseUrl' | 'config'>;

function notPending(row: repo.CollectionRow, action: string): AppError {
  return new AppError('invalid_state_transition', `A ${row.status} collection cannot be ${action}`);
}

const CHANNEL = { card: 'card', bank_transfer: 'bank_transfer', mobile_money: 'mobile_money' } as const;

/**
 * Posts the payer's money: settlement -> destination (amount - fee) and the business's fee
 * account (fee). When the money already arrived as an inbound bank transfer (`funded`), only the
 * fee moves, from the destination account. No fee when the destination is the business's own.
 */
async function postSettlement(trx: Trx, writes: WriteSet, ctx: Scope, d: Deps, row: repo.CollectionRow, funded: boolean) {
  const destination = (await accounts.lockForMovement(trx, ctx, [row.destination_account_id])).get(row.destination_account_id)!;
  let fee = destination.customer_id === null ? 0n : collectionFee(await settingsOf(trx, ctx.tenantId), d.config, row);
  const feeAccount = fee > 0n ? await accounts.businessFeeAccount(trx, ctx, row.currency) : undefined;
  if (feeAccount?.id === destination.id) fee = 0n;
  const ccy = row.currency;
  const legs: ledger.Leg[] = funded
    ? []
    : [{ accountId: await ledger.systemAccount(trx, ctx, 'settlement', ccy), amount: -row.amount, currency: ccy }];
  const toDestination = (funded ? 0n : row.amount) - fee;
  if (toDestination !== 0n) legs.push({ accountId: destination.id, amount: toDestination, currency: ccy });
  if (fee > 0n) legs.push({ accountId: feeAccount!.id, amount: fee, currency: ccy });
  if (legs.length < 2) return { fee, posting: undefined, transactionId: null };
  const posting = await ledger.post(
    trx,
    ctx,
    { kind: funded ? 'collection_fee' : 'collection', reference: row.id, metadata: { collection_id: row.id, fee: String(fee) }, legs },
    writes,
  );
  const common = { currency: ccy, channel: CHANNEL[row.method], receivingAccountId: destination.id };
  const sides: transactions.AccountSide[] = funded
    ? [
        {
          ...common,
          accountId: destination.id,
          customerId: destination.customer_id,
          direction: 'out',
          amount: fee,
          transactionType: 'fee_charge',
          description: `Collection fee ${row.id}`,
        },
      ]
    : [
        {
          ...common,
          accountId: destination.id,
          customerId: destination.customer_id,
          direction: 'in',
          amount: row.amount,
          fee,
          transactionType: 'credit',
          description: `Collection by ${row.method.replace('_', ' ')}`,
        },
      ];
  if (fee > 0n)
    sides.push({
      ...common,
      accountId: feeAccount!.id,
      customerId: null,
      direction: 'in',
      amount: fee,
      transactionType: 'fee_charge',
      description: `Collection fee ${row.id}`,
      receivingAccountId: feeAccount!.id,
    });
  const [tx] = await transactions.recordMovement(writes, ctx, { reference: row.id, clientReference: row.client_reference, posting, sides });
  return { fee, posting, transactionId: tx!.id };
}

export async function completeCollection(
  trx: Trx,
  ctx: Scope,
  d: Deps,
  id: string,
  extra: { detailedStatus?: string; savedCardId?: string | null; funding?: { transactionId: string; ledgerTransactionId: string } } = {},
) {
  const row = await repo.findCollection(trx, ctx, id, 'update');
  if (!row) throw notFound('Collection');
  if (row.status !== 'pending') throw notPending(row, 'completed');
  // The ledger and account transactions go as one statement (db/write-set.ts), before the
  // collection row that refers to them.
  const settled = await inOneStatement(trx, (writes) => postSettlement(trx, writes, ctx, d, row, extra.funding !== undefined));
  const done = await repo.finishCollection(trx, ctx, id, {
    status: 'completed',
    detailed_status: extra.detailedStatus ?? 'completed',
    fee: settled.fee,
    completed_at: new Date(),
    saved_card_id: extra.savedCardId ?? null,
    transaction_id: extra.funding?.transactionId ?? settled.transactionId,
    ledger_transaction_id: extra.funding?.ledgerTransactionId ?? settled.posting?.id ?? null,
  });
  if (!done) throw notPending(row, 'completed');
  const response = toResponse(d, done);
  await recordEvent(trx, ctx, 'collection.status.completed', response);
  return response;
}

export async function failCollection(
  trx: Trx,
  ctx: Scope,
  d: Deps,
  id: string,
  code: string,
  reason: string,
  detailedStatus = 'provider_failed',
) {
  const row = await repo.findCollection(trx, ctx, id, 'update');
  if (!row) throw notFound('Collection');
  if (row.status !== 'pending') throw notPending(row, 'failed');
  const done = await repo.finishCollection(trx, ctx, id, {
    status: 'failed',
    detailed_status: detailedStatus,
    failure_code: code,
    failure_reason: reason,
  });
  if (!done) throw notPending(row, 'failed');
  const response = toResponse(d, done);
  await recordEvent(trx, ctx, 'collection.status.failed', response);
  return response;
}

export async function expireCollection(trx: Trx, ctx: Scope, d: Deps, id: string, reason = 'The payer did not pay in time') {
  const row = await repo.findCollection(trx, ctx, id, 'update');
  if (!row) throw notFound('Collection');
  if (row.status !== 'pending') throw notPending(row, 'expired');
  const done = await repo.finishCollection(trx, ctx, id, {
    status: 'expired',
    detailed_status: 'expired',
    failure_code: 'expired',
    failure_reason: reason,
  });
  if (!done) throw notPending(row, 'expired');
  const response = toResponse(d, done);
  await recordEvent(trx, ctx, 'collection.status.expired', response);
  return response;
}

/** The expiry job: pending collections past `expires_at` expire, in the tick's transaction (one per batch). */
export async function expireDueCollections(trx: Trx, d: Deps, batch = 50): Promise<boolean> {
  const due = await repo.dueForExpiry(trx, batch);
  for (const c of due) await expireCollection(trx, { tenantId: c.tenant_id, environment: c.environment as Environment }, d, c.id);
  return due.length === batch;
}

/**
 * Called by the inbound bank transfer path (sandbox funding) after it credited `accountId`:
 * when a pending bank-transfer collection into that account carries this reference and amount,
 * the payment completes it (and its fee moves). Other payments are plain fundings.
 */
export async function settleInboundTransfer(
  trx: Trx,
  ctx: Scope,
  d: Deps,
  payment: { accountId: string; amount: bigint; reference: string; transactionId: string; ledgerTransactionId: string },
): Promise<boolean> {
  const row = await repo.findByPaymentReference(trx, ctx, payment.accountId, payment.reference);
  if (!row || row.status !== 'pending' || row.method !== 'bank_transfer' || row.amount !== payment.amount) return false;
  await completeCollection(trx, ctx, d, row.id, {
    funding: { transactionId: payment.transactionId, ledgerTransactionId: payment.ledgerTransactionId },
  });
  return true;
}

/** Sandbox: the payer pays, fails or never pays. */
export async function simulateCollection(
  trx: Trx,
  ctx: Scope,
  d: Deps,
  id: string,
  action: 'complete' | 'fail' | 'expire',
  reason: string | null,
) {
  if (ctx.environment !== 'sandbox') throw notFound('Route');
  if (action === 'complete') return completeCollection(trx, ctx, d, id, { detailedStatus: 'completed' });
  if (action === 'fail') return failCollection(trx, ctx, d, id, 'payer_declined', reason ?? 'The payer declined the payment');
  return expireCollection(trx, ctx, d, id, reason ?? undefined);
}
