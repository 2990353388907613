import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { AppError, validationError } from '../../core/errors.js';
import { findInstitution } from '../../lib/institutions.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as approvals from '../approvals/service.js';
import { payeeDetailsOf, requireExternalAccount } from '../external-accounts/service.js';
import { requireFeature } from '../features/service.js';
import type { PayeeDetails } from '../../rails/index.js';
import type * as transactions from '../transactions/service.js';
import {
  assertCustomerOwnsSource,
  baseTransferRow,
  lockedSource,
  movementRecordOf,
  type MovementRequest,
  type Prepared,
} from './internal.js';
import { currencyMismatch } from './errors.js';
import { assertWithinRailLimit, channelOf, convert, parseRemitter, payoutFee, railFor } from './payout-rules.js';
import type * as repo from './repo.js';
import type { CreateTransferBody } from './schema.js';

/** What a payout keeps in the transfer's metadata to finish it later, exactly once. */
export interface PayoutMetadata {
  fee_hold_id: string | null;
  fee_account_id: string | null;
  /** Ledger account credited by the principal hold: settlement (same currency) or FX position. */
  principal_account_id: string;
  mid_rate: string | null;
  spread_bps: number;
  remitter: unknown;
  /** The payee as it was when the transfer was made (it may be deleted before the rail is called). */
  payee: PayeeDetails;
  /**
   * Maker-checker (business setting `approvals.payouts_above`): a payout above the threshold is
   * created `pending` with its funds held, but is not handed to its rail until approved
   * (payout-approval.ts). Absent when no approval was needed.
   */
  approval?: 'waiting_approval' | 'approved' | 'rejected' | 'expired';
  /** A payout that settles an FX order to its standing settlement instruction (fx/ssi.ts). */
  fx_order_id?: string;
}

function payeeNotUsable(status: string): AppError {
  return new AppError('account_inactive', `The external account is ${status}`, [
    {
      field: 'destination.id',
      code: 'account_inactive',
      message: status === 'pending' ? 'Wait until its verification completes' : 'Its verification failed',
    },
  ]);
}

async function loadParties(trx: Trx, ctx: RequestContext, body: CreateTransferBody, locked: Map<string, accounts.MovementAccountRow>) {
  const payee = await requireExternalAccount(trx, ctx, body.destination.id!);
  if (payee.status !== 'active') throw payeeNotUsable(payee.status);
  const source = lockedSource(body, locked);
  await assertCustomerOwnsSource(trx, ctx, body, source);
  // A customer's money goes only to that customer's payees; the business's own accounts may pay any.
  if (source.customer_id !== null && payee.customer_id !== source.customer_id) {
    throw validationError([{ field: 'destination.id', code: 'mismatch', message: 'The external account belongs to another customer' }]);
  }
  accounts.assertCanDebit(source);
  return { payee, source };
}

function assertInstitutionBounds(institutionId: string | null, localAmount: bigint, currency: string) {
  const inst = institutionId ? findInstitution(institutionId) : undefined;
  if (!inst) return;
  if (localAmount < inst.minAmount || localAmount > inst.maxAmount) {
    const range = `${formatAmount(inst.minAmount, currency)}-${formatAmount(inst.maxAmount, currency)} ${currency}`;
    throw new AppError('limit_exceeded', undefined, [
      { field: 'amount', code: 'limit_exceeded', message: `The payee receives between ${range}` },
    ]);
  }
}

/**
 * A payout as a kind of the batch posting path (batch.ts): a transfer to an external account.
 * Its amount plus fee is held on the source account now (not posted); the rail's connector then
 * settles it (hold posted) or fails it (hold released). International payouts lock the rate
 * here: the payee receives `local_amount` in its currency.
 */
export interface Payout extends Prepared {
  kind: 'payout';
  payee: Awaited<ReturnType<typeof requireExternalAccount>>;
  rail: ReturnType<typeof railFor>;
  fx: Awaited<ReturnType<typeof convert>>;
  /** Ledger account credited by the principal hold: settlement (same currency) or FX position. */
  principalAccountId: string;
  remitter: unknown;
  /** Maker-checker: the approval policy when the payout waits for one (payout-approval.ts). */
  waitingFor: approvals.ApprovalPolicy | null;
}

export const isPayout = (p: Prepared): p is Payout => p.kind === 'payout';

/**
 * Every check of a payout that needs no balance, in the order a client meets them: the parties,
 * the amount and fee, the rail's and the institution's limits, the rate, then the
 * international_transfers feature. The KYC limits and the funds are decided by the batch.
 */
export async function preparePayout(
  trx: Trx,
  req: MovementRequest,
  id: string,
  locked: Map<string, accounts.MovementAccountRow>,
): Promise<Payout> {
  const { ctx, config, body, payout: options } = req;
  const { payee, source } = await loadParties(trx, ctx, body, locked);
  const currency = source.currency;
  const gross = parseAmount(body.amount, currency);
  if (body.currency && body.currency !== currency) {
    throw currencyMismatch('currency', 'source account', currency);
  }
  const rail = railFor(payee.payee_type, payee.payment_rail, body.destination.rail);
  // Fee included (an FX order's proceeds): the fee is that of the whole sum, and comes out of it.
  const includedFee = options?.feeIncluded ? payoutFee(ctx.settings, rail, currency, gross, config) : undefined;
  const amount = gross - (includedFee ?? 0n);
  if (amount <= 0n) {
    throw new AppError('invalid_amount', undefined, [
      { field: 'amount', code: 'invalid_amount', message: `The payout fee is ${formatAmount(includedFee!, currency)} ${currency}` },
    ]);
  }
  const policy = approvals.policyOf(ctx);
  const waiting = !options?.approved && approvals.payoutNeedsApproval(policy, currency, amount);
  const remitter = options ? options.remitter : parseRemitter(payee.payee_type, body.additional_information);
  assertWithinRailLimit(ctx.settings, rail, currency, amount, config);
  const fx = await convert(trx, ctx, amount, currency, payee.currency, config);
  assertInstitutionBounds(payee.institution_id, fx.localAmount, payee.currency);
  const international = payee.currency !== currency || rail === 'swift';
  if (source.customer_id !== null && international) await requireFeature(trx, ctx, source.customer_id, 'international_transfers');
  const fee = includedFee ?? payoutFee(ctx.settings, rail, currency, amount, config);
  const principalAccountId = await ledger.systemAccount(trx, ctx, fx.rate ? 'fx_position' : 'settlement', currency);
  return {
    req,
    id,
    kind: 'payout',
    source,
    destination: { id: payee.id, customer_id: payee.customer_id },
    currency,
    amount,
    fee,
    payee,
    rail,
    fx,
    principalAccountId,
    remitter,
    waitingFor: waiting ? policy : null,
  };
}

/** The principal, and the fee when there is one: held together (batch.tryHolds), all or none. */
export function payoutHolds(p: Payout): ledger.HoldInput[] {
  const common = { debitAccountId: p.source.id, currency: p.currency, reference: p.id };
  const holds: ledger.HoldInput[] = [{ ...common, creditAccountId: p.principalAccountId, amount: p.amount, kind: 'payout' }];
  if (p.feeAccount && p.fee > 0n) holds.push({ ...common, creditAccountId: p.feeAccount.id, amount: p.fee, kind: 'payout_fee' });
  return holds;
}

/** The source's one account transaction, pending until the rail settles it. */
export function payoutMovement(p: Payout): transactions.MovementRecord {
  return movementRecordOf(p, [
    {
      accountId: p.source.id,
      customerId: p.source.customer_id,
      direction: 'out',
      amount: p.amount,
      fee: p.fee,
      currency: p.currency,
      channel: channelOf(p.rail),
      transactionType: 'global_remittance',
      status: 'pending',
      description: p.req.body.description ?? '',
      sendingAccountId: p.source.id,
      metadata: {
        external_account_id: p.payee.id,
        rail: p.rail,
        local_amount: formatAmount(p.fx.localAmount, p.fx.localCurrency),
        local_currency: p.fx.localCurrency,
        rate: p.fx.rate,
      },
    },
  ]);
}

export function payoutRow(p: Payout, holds: ledger.Hold[], transactionId: string): repo.TransferRow {
  const { body, payout: options } = p.req;
  const [principal, feeHold] = holds;
  const payout: PayoutMetadata = {
    fee_hold_id: feeHold?.id ?? null,
    fee_account_id: feeHold ? p.feeAccount!.id : null,
    principal_account_id: p.principalAccountId,
    mid_rate: p.fx.midRate,
    spread_bps: p.fx.spreadBps,
    remitter: p.remitter ?? null,
    payee: payeeDetailsOf(p.payee),
    ...(p.waitingFor ? { approval: 'waiting_approval' as const } : {}),
    ...(options ? { fx_order_id: options.fxOrderId } : {}),
  };
  return {
    ...baseTransferRow(p, transactionId),
    rail: p.rail,
    fee: feeHold ? p.fee : 0n,
    local_amount: p.fx.localAmount,
    local_currency: p.fx.localCurrency,
    rate: p.fx.rate,
    status: 'pending',
    hold_id: principal!.id,
    metadata: { ...(body.metadata ?? {}), payout },
  };
}

/** A payout above the business's threshold waits for a checker before its rail sees it. */
export async function requestPayoutApproval(db: Queryable, p: Payout): Promise<void> {
  if (!p.waitingFor) return;
  const description = p.req.body.description ?? '';
  await approvals.requestApproval(db, p.req.ctx, p.waitingFor, {
    kind: 'payout',
    subjectId: p.id,
    summary: `Payout of ${formatAmount(p.amount, p.currency)} ${p.currency} to ${p.payee.account_name} (${p.rail})${description ? `: ${description}` : ''}`,
    amount: p.amount,
    currency: p.currency,
  });
}
