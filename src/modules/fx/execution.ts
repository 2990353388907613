import { sql } from 'kysely';
import type { Trx } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import * as ledger from '../../ledger/index.js';
import { omitNulls } from '../../lib/absent.js';
import { formatAmount } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvent } from '../webhooks/service.js';
import { assertConvertible, counterAmount, formatRate, rateFromDb } from '../../lib/decimal.js';
import { fxFee } from '../pricing/service.js';
import * as repo from './repo.js';
import type { OrderResponse } from './schema.js';
import { conversionLegs, type ConversionInput } from './service.js';
import { payOut, prepareSettlement, type ExecutionEnv } from './ssi.js';

type SideOf = { side: 'buy' | 'sell'; base: string; quote: string };

/** The currency the customer pays in: the base when selling it, the quote when buying the base. */
export const sourceCurrency = (o: SideOf) => (o.side === 'sell' ? o.base : o.quote);
export const destinationCurrency = (o: SideOf) => (o.side === 'sell' ? o.quote : o.base);

export interface Priced {
  /** quote-currency minor units: received (sell, rounded down) or paid (buy, rounded up) */
  counter: bigint;
  /** what leaves the source account before the fee, in the source currency */
  given: bigint;
  /** what reaches the destination account */
  received: bigint;
  /** on `given`, in the source currency, rounded up */
  fee: bigint;
}

/** The amounts of an order at `rate` (quote units per base unit), by the rounding rule. */
export function priceOrder(order: SideOf & { amount: bigint }, rate: bigint, feeBps: number): Priced {
  const counter = counterAmount(order.side, order.amount, order.base, order.quote, rate);
  const given = order.side === 'sell' ? order.amount : counter;
  const received = order.side === 'sell' ? counter : order.amount;
  const fee = fxFee(given, feeBps);
  assertConvertible(given, received, given + fee);
  return { counter, given, received, fee };
}

/** The internal account an order's proceeds are credited to: its destination, or an ssi order's settlement account. */
export const creditedAccountId = (o: Pick<repo.OrderRow, 'destination_id' | 'settlement_account_id'>) =>
  o.settlement_account_id ?? o.destination_id;

/**
 * Books an order in ONE ledger posting (source -> fx_position of the source currency, fx_position
 * of the destination currency -> destination, fee -> the business's own account), writes each
 * account's transaction, completes the order and records fx.order.completed. The rate, mid rate,
 * spread and fee go on the ledger transaction's metadata and on the order. An order settling to a
 * standing settlement instruction (ssi.ts) pays its proceeds out from `destination` (its
 * settlement account) in the same transaction, before the event.
 */
export async function executeConversion(
  trx: Trx,
  ctx: Scope,
  env: ExecutionEnv,
  order: repo.OrderRow,
  source: accounts.MovementAccountRow,
  destination: accounts.MovementAccountRow,
  p: Executed,
): Promise<repo.OrderRow> {
  await prepareSettlement(trx, ctx, order);
  const feeAccount = p.fee > 0n ? await accounts.businessFeeAccount(trx, ctx, source.currency) : undefined;
  const legs = await conversionLegs(trx, ctx, conversionInput({ source, destination, feeAccount }, p));
  const terms = conversionTerms(order, source.currency, p);
  const posting = await ledger.post(trx, ctx, { kind: 'fx', reference: order.id, metadata: terms, legs });
  const sides = conversionSides(order, { source, destination, feeAccount }, p, terms);
  const [sourceTx] = await transactions.recordMovement(trx, ctx, { reference: order.id, posting, sides });
  const payoutId = order.destination_type === 'ssi' ? await payOut(trx, ctx, env, order, destination, p.received) : null;
  const row = await repo.updateOrder(trx, ctx, order.id, {
    ...executedColumns(p, terms, posting.id, sourceTx?.id ?? null),
    payout_transfer_id: payoutId,
    executed_at: sql<Date>`now()` as unknown as Date,
  });
  await recordEvent(trx, ctx, 'fx.order.completed', toOrderResponse(row));
  return row;
}

type OrderTerms = Pick<repo.OrderRow, 'id' | 'base' | 'quote' | 'side' | 'spread_bps'>;
export type ConversionTerms = ReturnType<typeof conversionTerms>;
/** An order's amounts at the rate it executes at, with the mid rate it was priced from. */
export type Executed = Priced & { mid: bigint; rate: bigint };

/** The accounts a conversion moves money between. */
export interface Parties {
  source: accounts.MovementAccountRow;
  destination: accounts.MovementAccountRow;
  /** The business's account the fee goes to (or the id reserved for its first one: batch.ts). */
  feeAccount: { id: string } | undefined;
}

/** What conversionLegs needs to know of a conversion. */
export function conversionInput({ source, destination, feeAccount }: Parties, p: Priced): ConversionInput {
  return {
    fromAccountId: source.id,
    givenCurrency: source.currency,
    given: p.given,
    toAccountId: destination.id,
    receivedCurrency: destination.currency,
    received: p.received,
    fee: p.fee,
    ...(feeAccount ? { feeAccountId: feeAccount.id } : {}),
  };
}

/** The terms a conversion books: on its ledger transaction's and account transactions' metadata, and on the order. */
export function conversionTerms(order: OrderTerms, sourceCurrency: string, p: Executed) {
  return {
    fx_order_id: order.id,
    pair: `${order.base}/${order.quote}`,
    side: order.side,
    rate: formatRate(p.rate),
    mid_rate: formatRate(p.mid),
    spread_bps: order.spread_bps,
    fee: formatAmount(p.fee, sourceCurrency),
    fee_currency: sourceCurrency,
  };
}

/** Each account's transaction of a conversion: the source pays, the destination receives, the fee account takes the fee. */
export function conversionSides(order: OrderTerms, parties: Parties, p: Executed, terms: ConversionTerms): transactions.AccountSide[] {
  const { source, destination, feeAccount } = parties;
  const common = { channel: 'swap' as const, sendingAccountId: source.id, receivingAccountId: destination.id, metadata: terms };
  const description = `FX ${order.side} ${order.base}/${order.quote} at ${terms.rate}`;
  const sides: transactions.AccountSide[] = [
    {
      ...common,
      accountId: source.id,
      customerId: source.customer_id,
      direction: 'out',
      amount: p.given,
      fee: p.fee,
      currency: source.currency,
      transactionType: 'debit',
      description,
    },
    {
      ...common,
      accountId: destination.id,
      customerId: destination.customer_id,
      direction: 'in',
      amount: p.received,
      currency: destination.currency,
      transactionType: 'credit',
      description,
    },
  ];
  if (feeAccount) {
    sides.push({
      ...common,
      accountId: feeAccount.id,
      customerId: null,
      direction: 'in',
      amount: p.fee,
      currency: source.currency,
      transactionType: 'fee_charge',
      receivingAccountId: feeAccount.id,
      description: 'FX fee',
    });
  }
  return sides;
}

/** The columns an order gets when it executes (its status, price and bookings). */
export function executedColumns(p: Executed, terms: ConversionTerms, ledgerTransactionId: string, transactionId: string | null) {
  return {
    status: 'completed' as const,
    rate: terms.rate,
    mid_rate: terms.mid_rate,
    converted_amount: p.counter,
    fee: p.fee,
    ledger_transaction_id: ledgerTransactionId,
    transaction_id: transactionId,
  };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toOrderResponse(row: repo.OrderRow): OrderResponse {
  const feeCurrency = sourceCurrency(row);
  // Absent, never null, where the reference types the field as a string (docs/api-rules.md#absent-values).
  return omitNulls(
    {
      id: row.id,
      order_id: row.id,
      order_type: row.order_type,
      side: row.side,
      pair: { base: row.base, quote: row.quote },
      amount: formatAmount(row.amount, row.base),
      amount_currency: row.base,
      converted_amount: row.converted_amount === null ? null : formatAmount(row.converted_amount, row.quote),
      converted_currency: row.quote,
      rate: row.rate === null ? null : formatRate(rateFromDb(row.rate)),
      mid_rate: row.mid_rate === null ? null : formatRate(rateFromDb(row.mid_rate)),
      spread_bps: row.spread_bps,
      target_rate: row.target_rate === null ? null : formatRate(rateFromDb(row.target_rate)),
      fee: row.fee === null ? null : formatAmount(row.fee, feeCurrency),
      fee_currency: feeCurrency,
      status: row.status,
      customer_id: row.customer_id,
      tenant_id: row.tenant_id,
      source_type: row.source_type,
      source_id: row.source_id,
      destination_type: row.destination_type,
      destination_id: row.destination_id,
      settlement_account_id: row.settlement_account_id,
      payout_transfer_id: row.payout_transfer_id,
      quote_id: row.quote_id,
      transaction_id: row.transaction_id,
      created_by_user_id: row.created_by_user_id,
      created_by_role: row.created_by_role,
      approved_by_user_id: row.approved_by_user_id,
      approved_at: iso(row.approved_at),
      rejected_by_user_id: row.rejected_by_user_id,
      rejected_at: iso(row.rejected_at),
      rejection_reason: row.rejection_reason,
      executed_at: iso(row.executed_at),
      settled_at: iso(row.executed_at),
      expires_at: iso(row.expires_at),
      created_at: row.created_at.toISOString(),
      updated_at: iso(row.updated_at),
    },
    ['converted_amount', 'rate', 'customer_id', 'created_by_user_id', 'created_by_role', 'settlement_account_id', 'payout_transfer_id'],
  );
}
