import type { Config } from '../../config.js';
import type { Queryable, Trx } from '../../db/client.js';
import type { RequestContext, Scope } from '../../core/context.js';
import { AppError, notFound, validationError } from '../../core/errors.js';
import type { BusinessSettings } from '../../core/settings.js';
import { formatAmount } from '../../lib/money.js';
import * as accounts from '../accounts/service.js';
import { requireCustomer, type CustomerRow } from '../customers/service.js';
import { requireExternalAccount } from '../external-accounts/service.js';
import { settingsOf } from '../tenants/service.js';
import { lockCustomerSpending, settlementPayout } from '../transfers/service.js';
import type * as repo from './repo.js';

/**
 * Standing settlement instructions (`destination_type: "ssi"`): an FX order whose proceeds go to
 * an active external account of the order's customer, in the order's destination currency.
 *
 * The conversion is booked as for any order, into the customer's own account in the destination
 * currency (the settlement account: the newest active one, as the default destination); in the
 * same transaction a payout of the proceeds leaves that account for the external account through
 * the ordinary payout path (transfers/external.ts: holds, limits, events, dispatch, rail outcome,
 * return). A payout the rail fails or returns gives the money back to the settlement account,
 * where the customer sees it. The payout fee is taken from the proceeds (the settlement account
 * ends where it started); the remitter is the customer on file (the reference's order has no
 * remitter fields, and the customer pays itself).
 */

/** What executing an order needs beyond its scope: the configuration and the business's settings. */
export interface ExecutionEnv {
  config: Config;
  /** Loaded from the business when absent (workers, approvals). */
  settings?: BusinessSettings;
}

export type SettlementInstruction = Awaited<ReturnType<typeof requireExternalAccount>>;

const refused = (code: 'account_inactive' | 'currency_mismatch', message: string) =>
  new AppError(code, message, [{ field: 'destination_id', code, message }]);

/**
 * The settlement instruction of a new order: an external account of the order's customer, active
 * and in the currency the order receives (404 unknown or another business's, 400 another
 * customer's, 409 not active, 422 another currency).
 */
export async function resolveInstruction(
  db: Queryable,
  ctx: Scope,
  id: string | undefined,
  customerId: string | null | undefined,
  currency: string,
): Promise<SettlementInstruction> {
  if (!id) throw validationError([{ field: 'destination_id', code: 'required', message: 'Required with destination_type ssi' }]);
  if (!customerId) {
    throw validationError([
      { field: 'customer_id', code: 'required', message: 'An order settling to a standing settlement instruction is a customer order' },
    ]);
  }
  const instruction = await requireExternalAccount(db, ctx, id).catch((err: unknown) => {
    if (err instanceof AppError && err.code === 'not_found')
      throw notFound('External account', [{ field: 'destination_id', code: 'not_found', message: 'No such external account' }]);
    throw err;
  });
  if (instruction.customer_id !== customerId) {
    throw validationError([{ field: 'destination_id', code: 'mismatch', message: 'The external account belongs to another customer' }]);
  }
  assertUsable(instruction, currency);
  return instruction;
}

function assertUsable(instruction: SettlementInstruction, currency: string) {
  if (instruction.status !== 'active') {
    throw refused(
      'account_inactive',
      instruction.status === 'pending' ? 'The external account is still pending verification' : 'The external account failed verification',
    );
  }
  if (instruction.currency !== currency) {
    throw refused('currency_mismatch', `The order settles ${currency}; the external account receives ${instruction.currency}`);
  }
}

/** At execution (approval, limit worker): the instruction must still be usable. */
export async function recheckInstruction(db: Queryable, ctx: Scope, order: repo.OrderRow, currency: string): Promise<void> {
  assertUsable(await requireExternalAccount(db, ctx, order.destination_id), currency);
}

/** The remitter of a settlement payout: the order's customer, as on file. */
function remitterOf(c: CustomerRow) {
  const name =
    c.type === 'business' ? (c.business_name ?? '') : [c.first_name, c.middle_name, c.last_name].filter((p) => p !== null).join(' ');
  return {
    source: 'customer_record',
    customer_id: c.id,
    remitter_full_name: name,
    ...(c.first_name ? { remitter_first_name: c.first_name } : {}),
    ...(c.last_name ? { remitter_last_name: c.last_name } : {}),
    ...(c.date_of_birth ? { remitter_date_of_birth: c.date_of_birth } : {}),
    ...(c.registration_number ? { remitter_document_number: c.registration_number } : {}),
    remitter_country: c.address.country,
    remitter_address: c.address,
  };
}

/** Before the conversion's postings: the payout's lock order (transfers/service.ts). */
export async function prepareSettlement(trx: Trx, scope: Scope, order: repo.OrderRow): Promise<void> {
  if (order.destination_type === 'ssi' && order.customer_id) await lockCustomerSpending(trx, scope, order.customer_id);
}

/**
 * Pays a completed conversion's proceeds (`received`, in the settlement account) out to the
 * order's settlement instruction: one payout, in the order's transaction. The payout needs no
 * approval of its own when the order was approved (maker-checker); otherwise the business's
 * payout threshold applies as to any payout.
 */
export async function payOut(
  trx: Trx,
  scope: Scope,
  env: ExecutionEnv,
  order: repo.OrderRow,
  settlement: accounts.MovementAccountRow,
  received: bigint,
): Promise<string> {
  const ctx: RequestContext = {
    ...scope,
    keyKind: 'secret',
    requestId: order.id,
    settings: env.settings ?? (await settingsOf(trx, scope.tenantId)),
  };
  const customer = await requireCustomer(trx, scope, order.customer_id!);
  const transfer = await settlementPayout(
    trx,
    ctx,
    {
      sourceAccountId: settlement.id,
      externalAccountId: order.destination_id,
      amount: formatAmount(received, settlement.currency),
      customerId: order.customer_id!,
      description: `Settlement of FX order ${order.id}`,
      remitter: remitterOf(customer),
      feeIncluded: true,
      approved: order.approved_by_user_id !== null,
      fxOrderId: order.id,
    },
    env.config,
  );
  return transfer.id;
}
