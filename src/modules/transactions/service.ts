import type { Queryable } from '../../db/client.js';
import type { Writer } from '../../db/write-set.js';
import type { Scope } from '../../core/context.js';
import { notFound } from '../../core/errors.js';
import { withExtra, type Page, type PageExtra } from '../../db/pagination.js';
import { omitNulls } from '../../lib/absent.js';
import { newId } from '../../lib/ids.js';
import { formatAmount } from '../../lib/money.js';
import type { PostedTransaction } from '../../ledger/index.js';
import * as repo from './repo.js';
import type {
  Channel,
  ExportQuery,
  ListTransactionsQuery,
  TransactionResponse,
  TransactionStatus,
  TransactionType,
  VolumeQuery,
} from './schema.js';

export type TransactionRow = repo.TransactionRow;

/** One account's side of a movement: becomes one transaction on that account. */
export interface AccountSide {
  accountId: string;
  customerId: string | null;
  direction: 'in' | 'out';
  amount: bigint;
  fee?: bigint;
  currency: string;
  channel: Channel;
  transactionType: TransactionType;
  status?: TransactionStatus;
  description?: string;
  sendingAccountId?: string | null;
  receivingAccountId?: string | null;
  cardId?: string | null;
  metadata?: Record<string, unknown>;
}

export interface MovementRecord {
  reference: string;
  clientReference?: string | null;
  clientMetadata?: string | null;
  externalId?: string | null;
  /** The ledger posting: gives each account's balance before and after. */
  posting?: PostedTransaction;
  sides: AccountSide[];
}

/** The account's posted balance around postings (in order): after its last entry, before its first. */
function balancesAround(postings: (PostedTransaction | undefined)[], accountId: string) {
  // A loop, not flatMap and filter: this runs for every side of every movement.
  let total = 0n;
  let after: bigint | null = null;
  for (const posting of postings) {
    for (const e of posting?.entries ?? []) {
      if (e.accountId !== accountId) continue;
      total += e.amount;
      after = e.balanceAfter;
    }
  }
  return after === null ? { before: null, after: null } : { before: after - total, after };
}

/** The per-account transaction rows of one movement (not yet written). */
function movementRows(ctx: Scope, movement: MovementRecord, now: Date) {
  return movement.sides.map((side) => {
    const { before, after } = balancesAround([movement.posting], side.accountId);
    return {
      id: newId(),
      tenant_id: ctx.tenantId,
      environment: ctx.environment,
      account_id: side.accountId,
      customer_id: side.customerId,
      ledger_transaction_id: movement.posting?.id ?? null,
      reference: movement.reference,
      client_reference: movement.clientReference ?? null,
      client_metadata: movement.clientMetadata ?? null,
      external_id: movement.externalId ?? null,
      direction: side.direction,
      currency: side.currency,
      amount: side.amount,
      fee: side.fee ?? 0n,
      balance_before: before,
      balance_after: after,
      channel: side.channel,
      transaction_type: side.transactionType,
      status: side.status ?? 'completed',
      description: side.description ?? '',
      sending_account_id: side.sendingAccountId ?? null,
      receiving_account_id: side.receivingAccountId ?? null,
      card_id: side.cardId ?? null,
      payment_link_id: null,
      metadata: JSON.stringify(side.metadata ?? {}),
      created_at: now,
      updated_at: now,
    };
  });
}

/** Writes the per-account transactions of one movement (call it in the posting's transaction). */
export async function recordMovement(trx: Writer, ctx: Scope, movement: MovementRecord): Promise<TransactionRow[]> {
  return (await recordMovements(trx, [{ ctx, movement }]))[0]!;
}

/** Writes the transactions of many movements with one statement (a batch of transfers). */
export async function recordMovements(trx: Writer, list: { ctx: Scope; movement: MovementRecord }[]): Promise<TransactionRow[][]> {
  const now = new Date();
  const perMovement = list.map(({ ctx, movement }) => movementRows(ctx, movement, now));
  await repo.insertTransactions(trx, perMovement.flat());
  return perMovement.map((rows, k) => rows.map((r, j) => ({ ...r, metadata: list[k]!.movement.sides[j]!.metadata ?? {} })));
}

const money = (minor: bigint | null, currency: string) => (minor === null ? null : formatAmount(minor, currency));

export function toTransactionResponse(row: TransactionRow): TransactionResponse {
  // Absent, never null, where the reference types the field as a string (docs/api-rules.md#absent-values).
  return omitNulls(
    {
      id: row.id,
      account_id: row.account_id,
      currency: row.currency,
      amount: formatAmount(row.amount, row.currency),
      fee: formatAmount(row.fee, row.currency),
      balance_before: money(row.balance_before, row.currency),
      balance_after: money(row.balance_after, row.currency),
      channel: row.channel,
      client_metadata: row.client_metadata,
      client_reference: row.client_reference,
      customer_id: row.customer_id,
      date_created: row.created_at.toISOString(),
      description: row.description,
      direction: row.direction,
      external_id: row.external_id,
      metadata: row.metadata,
      receiving_account_id: row.receiving_account_id,
      reference: row.reference,
      sending_account_id: row.sending_account_id,
      status: row.status as TransactionStatus,
      tenant_id: row.tenant_id,
      transaction_type: row.transaction_type,
      tx_hash: null,
    },
    ['client_reference', 'customer_id'],
  );
}

export async function getTransaction(db: Queryable, ctx: Scope, id: string): Promise<TransactionResponse> {
  const row = await repo.findTransaction(db, ctx, id);
  if (!row) throw notFound('Transaction');
  return toTransactionResponse(row);
}

/** A page of transactions; with `extra`, each item also carries the columns it joins (`extra`). */
export async function listTransactions<E = never>(
  db: Queryable,
  ctx: Scope,
  query: ListTransactionsQuery,
  extra?: PageExtra<E>,
): Promise<Page<TransactionResponse & { extra?: E }>> {
  const page = await repo.listTransactions(db, ctx, query, extra);
  return { ...page, items: page.items.map((r) => withExtra(toTransactionResponse(r), r, extra)) };
}

export async function volume(db: Queryable, ctx: Scope, query: VolumeQuery) {
  const rows = await repo.volume(db, ctx, query);
  const byCurrency = rows.map((r) => ({
    currency: r.currency,
    total_volume: formatAmount(BigInt(r.total), r.currency),
    transaction_count: Number(r.n),
  }));
  const single = byCurrency.length === 1 ? byCurrency[0]! : undefined;
  const total = single?.total_volume ?? (byCurrency.length === 0 ? '0' : undefined);
  return {
    ...(total !== undefined ? { total_volume: total } : {}),
    ...(single ? { currency: single.currency } : {}),
    by_currency: byCurrency,
  };
}

const EXPORT_PAGE = 500;

/**
 * Every matching transaction, newest first, read in keyset pages of EXPORT_PAGE so an export of
 * any size never holds more than one page in memory (PGlite cannot stream a cursor).
 */
export async function* exportTransactions(
  db: Queryable,
  ctx: Scope,
  query: ExportQuery,
  pageSize = EXPORT_PAGE,
): AsyncGenerator<TransactionResponse> {
  for await (const page of exportPages(db, ctx, query, pageSize)) yield* page;
}

/** The export as keyset pages (the route reads the first one before it commits to a status). */
export async function* exportPages(
  db: Queryable,
  ctx: Scope,
  query: ExportQuery,
  pageSize = EXPORT_PAGE,
): AsyncGenerator<TransactionResponse[]> {
  let before: string | undefined;
  for (;;) {
    const rows = await repo.exportPage(db, ctx, query, before, pageSize);
    yield rows.map(toTransactionResponse);
    if (rows.length < pageSize) return;
    before = rows[rows.length - 1]!.id;
  }
}

/**
 * Completes or fails a pending transaction (a held payout that settled or failed). On completion
 * the posting gives the account's balance before and after, as for any other movement.
 */
export async function finishPending(
  trx: Queryable,
  ctx: Scope,
  id: string,
  status: 'completed' | 'failed',
  postings: PostedTransaction[] = [],
): Promise<TransactionRow | undefined> {
  const row = await repo.findTransaction(trx, ctx, id);
  if (!row) return undefined;
  const { before, after } = balancesAround(postings, row.account_id);
  const balances = after === null ? {} : { balance_before: before, balance_after: after };
  return repo.finishPending(trx, ctx, id, { status, ...balances, ledger_transaction_id: postings[0]?.id ?? null });
}

/**
 * Completes many pending transactions, whose owners (payouts) this transaction locked, as
 * finishPending completes one: their accounts are read with `db`, and the update is written to
 * `to` (a batch's one write statement). Each is named with its owner's business and environment
 * (`ctx`), as the primary key finds it. Ids that are not pending are left alone, as alone.
 */
export async function completePending(
  db: Queryable,
  to: Writer,
  list: { ctx: Scope; id: string; postings: PostedTransaction[] }[],
): Promise<void> {
  const accounts = await repo.pendingAccounts(
    db,
    list.map((x) => ({ ...x.ctx, id: x.id })),
  );
  await repo.completePending(
    to,
    list.flatMap(({ ctx, id, postings }) => {
      const accountId = accounts.get(id);
      if (accountId === undefined) return [];
      const { before, after } = balancesAround(postings, accountId);
      return [{ ...ctx, id, balance_before: before, balance_after: after, ledger_transaction_id: postings[0]!.id }];
    }),
  );
}
