import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import type { RequestContext } from '../../core/context.js';
import { AppError, validationError } from '../../core/errors.js';
import { findInstitution } from '../../lib/institutions.js';
import { formatAmount, parseAmount } from '../../lib/money.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import * as approvals from '../approvals/service.js';
import { requireCustomer } from '../customers/service.js';
import { payeeDetailsOf, requireExternalAccount } from '../external-accounts/service.js';
import type { PayeeDetails } from '../../rails/index.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import { toTransferResponse } from './format.js';
import { refusalError } from './errors.js';
import { assertCustomerMayMove } from './limits.js';
import { assertWithinRailLimit, channelOf, convert, parseRemitter, payoutFee, railFor } from './payout-rules.js';
import * as repo from './repo.js';
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

/**
 * How a payout made by another module differs from one made with POST /v1/transfer: an FX order
 * settling to its standing settlement instruction (`ssi`) pays out its proceeds.
 */
export interface PayoutOptions {
  /** The remitter on file (the order's own customer), instead of `additional_information`. */
  remitter: unknown;
  /** The payout fee comes out of `amount` (the payee receives amount - fee) instead of on top. */
  feeIncluded: boolean;
  /** The payout needs no approval of its own (the order it settles was approved). */
  approved: boolean;
  fxOrderId: string;
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

async function loadParties(trx: Trx, ctx: RequestContext, body: CreateTransferBody) {
  const payee = await requireExternalAccount(trx, ctx, body.destination.id!);
  if (payee.status !== 'active') throw payeeNotUsable(payee.status);
  const source = (await accounts.lockForMovement(trx, ctx, [body.source.id])).get(body.source.id);
  if (!source)
    throw new AppError('not_found', 'Source account not found', [{ field: 'source.id', code: 'not_found', message: 'No such account' }]);
  if (body.customer_id) {
    await requireCustomer(trx, ctx, body.customer_id);
    if (source.customer_id !== body.customer_id) {
      throw validationError([{ field: 'customer_id', code: 'mismatch', message: 'The source account does not belong to this customer' }]);
    }
  }
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
    throw new AppError('limit_exceeded', `${inst.name} accepts ${range} per transfer`, [
      { field: 'amount', code: 'limit_exceeded', message: `The payee receives between ${range}` },
    ]);
  }
}

async function holdFunds(
  trx: Trx,
  ctx: RequestContext,
  id: string,
  input: { sourceId: string; principalAccountId: string; feeAccountId: string | null; amount: bigint; fee: bigint; currency: string },
) {
  // The ledger's typed refusal becomes the API error every transfer path uses (errors.ts).
  const principal = await ledger.tryHold(trx, ctx, {
    debitAccountId: input.sourceId,
    creditAccountId: input.principalAccountId,
    amount: input.amount,
    currency: input.currency,
    kind: 'payout',
    reference: id,
    metadata: { transfer_id: id },
  });
  if (!principal.ok) throw refusalError(principal);
  const fee =
    input.feeAccountId && input.fee > 0n
      ? await ledger.tryHold(trx, ctx, {
          debitAccountId: input.sourceId,
          creditAccountId: input.feeAccountId,
          amount: input.fee,
          currency: input.currency,
          kind: 'payout_fee',
          reference: id,
          metadata: { transfer_id: id },
        })
      : undefined;
  if (fee && !fee.ok) throw refusalError(fee);
  return { principal: principal.hold, fee: fee?.hold };
}

/**
 * A transfer to an external account (a payout). The amount plus fee is held on the source
 * account now; the rail's connector then settles it (hold posted), or fails it (hold released).
 * International payouts lock the rate here: the payee receives `local_amount` in its currency.
 */
export async function externalTransfer(
  trx: Trx,
  ctx: RequestContext,
  config: Config,
  id: string,
  body: CreateTransferBody,
  options?: PayoutOptions,
): Promise<repo.TransferRow> {
  const { payee, source } = await loadParties(trx, ctx, body);
  const currency = source.currency;
  const gross = parseAmount(body.amount, currency);
  if (body.currency && body.currency !== currency) {
    throw new AppError('currency_mismatch', `The source account holds ${currency}`, [
      { field: 'currency', code: 'currency_mismatch', message: `The source account holds ${currency}` },
    ]);
  }
  const rail = railFor(payee.payee_type, payee.payment_rail, body.destination.rail);
  // Fee included (an FX order's proceeds): the fee is that of the whole sum, and comes out of it.
  const includedFee = options?.feeIncluded ? payoutFee(ctx.settings, config, rail, currency, gross) : undefined;
  const amount = gross - (includedFee ?? 0n);
  if (amount <= 0n) {
    throw new AppError('invalid_amount', 'The amount does not cover the payout fee', [
      { field: 'amount', code: 'invalid_amount', message: `The payout fee is ${formatAmount(includedFee!, currency)} ${currency}` },
    ]);
  }
  const policy = approvals.policyOf(ctx);
  const waiting = !options?.approved && approvals.payoutNeedsApproval(policy, currency, amount);
  const remitter = options ? options.remitter : parseRemitter(payee.payee_type, body.additional_information);
  assertWithinRailLimit(ctx.settings, config, rail, currency, amount);
  const fx = await convert(trx, ctx, config, amount, currency, payee.currency);
  assertInstitutionBounds(payee.institution_id, fx.localAmount, payee.currency);
  const international = payee.currency !== currency || rail === 'swift';
  await assertCustomerMayMove(trx, ctx, config, { customerId: source.customer_id, currency, amount, international });

  let fee = includedFee ?? payoutFee(ctx.settings, config, rail, currency, amount);
  const feeAccount = fee > 0n ? await accounts.businessFeeAccount(trx, ctx, currency) : undefined;
  if (feeAccount?.id === source.id) fee = 0n; // the business paying from its own fee account owes itself nothing
  const principalAccountId = await ledger.systemAccount(trx, ctx, fx.rate ? 'fx_position' : 'settlement', currency);
  const holds = await holdFunds(trx, ctx, id, {
    sourceId: source.id,
    principalAccountId,
    feeAccountId: feeAccount?.id ?? null,
    amount,
    fee,
    currency,
  });

  const description = body.description ?? '';
  const [sourceTx] = await transactions.recordMovement(trx, ctx, {
    reference: id,
    clientReference: body.client_reference ?? null,
    clientMetadata: body.metadata ? JSON.stringify(body.metadata) : null,
    sides: [
      {
        accountId: source.id,
        customerId: source.customer_id,
        direction: 'out',
        amount,
        fee,
        currency,
        channel: channelOf(rail),
        transactionType: 'global_remittance',
        status: 'pending',
        description,
        sendingAccountId: source.id,
        metadata: {
          external_account_id: payee.id,
          rail,
          local_amount: formatAmount(fx.localAmount, fx.localCurrency),
          local_currency: fx.localCurrency,
          rate: fx.rate,
        },
      },
    ],
  });
  const payout: PayoutMetadata = {
    fee_hold_id: holds.fee?.id ?? null,
    fee_account_id: holds.fee ? feeAccount!.id : null,
    principal_account_id: principalAccountId,
    mid_rate: fx.midRate,
    spread_bps: fx.spreadBps,
    remitter: remitter ?? null,
    payee: payeeDetailsOf(payee),
    ...(waiting ? { approval: 'waiting_approval' as const } : {}),
    ...(options ? { fx_order_id: options.fxOrderId } : {}),
  };
  const now = new Date();
  const row: repo.TransferRow = {
    id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    reference: id,
    client_reference: body.client_reference ?? null,
    description,
    customer_id: source.customer_id,
    destination_customer_id: payee.customer_id,
    source_type: 'internal_account',
    source_id: source.id,
    destination_type: 'external_account',
    destination_id: payee.id,
    rail,
    currency,
    amount,
    fee: holds.fee ? fee : 0n,
    local_amount: fx.localAmount,
    local_currency: fx.localCurrency,
    rate: fx.rate,
    status: 'pending',
    failure_reason: null,
    ledger_transaction_id: null,
    transaction_id: sourceTx!.id,
    hold_id: holds.principal.id,
    metadata: { ...(body.metadata ?? {}), payout },
    created_at: now,
    updated_at: now,
  };
  await repo.insertTransfer(trx, { ...row, metadata: JSON.stringify(row.metadata) });
  await recordEvent(trx, ctx, 'transfer.status.pending', toTransferResponse(row));
  if (waiting) {
    await approvals.requestApproval(trx, ctx, policy, {
      kind: 'payout',
      subjectId: id,
      summary: `Payout of ${formatAmount(amount, currency)} ${currency} to ${payee.account_name} (${rail})${description ? `: ${description}` : ''}`,
      amount,
      currency,
    });
  }
  return row;
}
