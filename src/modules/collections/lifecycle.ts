import type { Trx } from '../../db/client.js';
import { inOneStatement, type WriteSet } from '../../db/write-set.js';
import { groupByScope, scopeKey, soleScope, type Environment, type Scope } from '../../core/context.js';
import { AppError, notFound, type ItemOutcome } from '../../core/errors.js';
import type { LockPlan } from '../../db/pipeline.js';
import * as ledger from '../../ledger/index.js';
import * as accounts from '../accounts/service.js';
import { settingsOf } from '../tenants/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import { keyedOnce } from '../../lib/memo.js';
import { clockTime, REAL_TIME, type Timeline } from '../../core/clock.js';
import * as repo from './repo.js';
import { collectionFee, toResponse, type CollectionDeps } from './service.js';

/**
 * A collection's outcomes: pending -> completed (money settles into the destination account,
 * less the business's fee) | failed | expired. Each is a conditional update on the locked row,
 * written with its ledger posting and event in one transaction, so it happens exactly once.
 */
type Deps = Pick<CollectionDeps, 'sealer' | 'baseUrl' | 'config'>;

function notPending(row: repo.CollectionRow, action: string): AppError {
  return new AppError('invalid_state_transition', `A ${row.status} collection cannot be ${action}`);
}

const CHANNEL = { card: 'card', bank_transfer: 'bank_transfer', mobile_money: 'mobile_money' } as const;

type Funding = { transactionId: string; ledgerTransactionId: string };

/** How a pending collection ends. */
export type Ending =
  | { status: 'completed'; detailedStatus: string; savedCardId?: string | null; funding?: Funding | undefined }
  | { status: 'failed'; detailedStatus: string; code: string; reason: string }
  | { status: 'expired'; reason: string };

/** A pending collection its caller locked and checked, and how it ends. */
export interface End {
  ctx: Scope;
  d: Deps;
  row: repo.CollectionRow;
  ending: Ending;
}

const EVENTS = {
  completed: 'collection.status.completed',
  failed: 'collection.status.failed',
  expired: 'collection.status.expired',
} as const;

/** A completion's settlement: its legs and account transactions (none when nothing moves). */
interface Settlement {
  fee: bigint;
  legs: ledger.Leg[];
  sides: transactions.AccountSide[];
}

/**
 * The payer's money: settlement -> destination (amount - fee) and the business's fee account
 * (fee). When the money already arrived as an inbound bank transfer (`funded`), only the fee
 * moves, from the destination account. No fee when the destination is the business's own.
 */
function settlementOf(
  row: repo.CollectionRow,
  destination: accounts.MovementAccountRow,
  fee: bigint,
  feeAccount: accounts.MovementAccountRow | undefined,
  settlementAccount: string | undefined,
): Settlement {
  if (feeAccount?.id === destination.id) fee = 0n;
  const ccy = row.currency;
  const legs: ledger.Leg[] = settlementAccount ? [{ accountId: settlementAccount, amount: -row.amount, currency: ccy }] : [];
  const toDestination = (settlementAccount ? row.amount : 0n) - fee;
  if (toDestination !== 0n) legs.push({ accountId: destination.id, amount: toDestination, currency: ccy });
  if (fee > 0n) legs.push({ accountId: feeAccount!.id, amount: fee, currency: ccy });
  const common = { currency: ccy, channel: CHANNEL[row.method], receivingAccountId: destination.id };
  const sides: transactions.AccountSide[] = settlementAccount
    ? [
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
      ]
    : [
        {
          ...common,
          accountId: destination.id,
          customerId: destination.customer_id,
          direction: 'out',
          amount: fee,
          transactionType: 'fee_charge',
          description: `Collection fee ${row.id}`,
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
  return { fee, legs: legs.length < 2 ? [] : legs, sides };
}

/** The settlement of each completion (others: undefined), with the accounts it needs found or created once. */
async function settlements(trx: Trx, ends: End[]): Promise<(Settlement | undefined)[]> {
  const completing = ends.filter((e) => e.ending.status === 'completed');
  const locked = await accounts.lockForMovements(
    trx,
    completing.map((e) => ({ ctx: e.ctx, ids: [e.row.destination_account_id] })),
  );
  const settings = keyedOnce<Awaited<ReturnType<typeof settingsOf>>>();
  const feeAccounts = keyedOnce<accounts.MovementAccountRow>();
  const systemAccounts = keyedOnce<string>();
  const out: (Settlement | undefined)[] = [];
  for (const { ctx, d, row, ending } of ends) {
    if (ending.status !== 'completed') {
      out.push(undefined);
      continue;
    }
    const key = `${scopeKey(ctx)}:${row.currency}`;
    const destination = locked.get(scopeKey(ctx))!.get(row.destination_account_id)!;
    const fee =
      destination.customer_id === null
        ? 0n
        : collectionFee(await settings(ctx.tenantId, () => settingsOf(trx, ctx.tenantId)), row, d.config);
    const feeAccount = fee > 0n ? await feeAccounts(key, () => accounts.businessFeeAccount(trx, ctx, row.currency)) : undefined;
    const settlement = ending.funding
      ? undefined
      : await systemAccounts(key, () => ledger.systemAccount(trx, ctx, 'settlement', row.currency));
    out.push(settlementOf(row, destination, fee, feeAccount, settlement));
  }
  return out;
}

/** The columns a collection gets as it ends. */
function endedColumns(ending: Ending, fee: bigint, booked: { transactionId: string | null; ledgerTransactionId: string | null }) {
  const updated_at = clockTime();
  switch (ending.status) {
    case 'completed':
      return {
        status: 'completed' as const,
        detailed_status: ending.detailedStatus,
        fee,
        completed_at: updated_at,
        saved_card_id: ending.savedCardId ?? null,
        transaction_id: ending.funding?.transactionId ?? booked.transactionId,
        ledger_transaction_id: ending.funding?.ledgerTransactionId ?? booked.ledgerTransactionId,
        updated_at,
      };
    case 'failed':
      return {
        status: 'failed' as const,
        detailed_status: ending.detailedStatus,
        failure_code: ending.code,
        failure_reason: ending.reason,
        updated_at,
      };
    case 'expired':
      return {
        status: 'expired' as const,
        detailed_status: 'expired',
        failure_code: 'expired',
        failure_reason: ending.reason,
        updated_at,
      };
  }
}

/**
 * Ends pending collections, each locked by its caller and checked pending, as ONE unit of work
 * (docs/money-path.md): the completions settle through one ledger PostingBatch (destination
 * accounts share-locked set-wise, every balance row locked once, ascending), and every write
 * (balances, ledger rows, account transactions, the collections' new columns, their events) goes
 * as one statement, into `writes` when the caller gives one. Lock order: collection rows (the
 * caller's) → accounts → (fee and settlement accounts found or created) → balance rows, as a
 * lone completion always took them. Returns each collection as it ended, in order, or the
 * ledger's refusal for that one alone (a fee the destination cannot pay).
 */
export async function endCollections(trx: Trx, ends: End[], writes?: WriteSet): Promise<(repo.CollectionRow | AppError)[]> {
  const planned = await settlements(trx, ends);
  const book = await ledger.PostingBatch.open(
    trx,
    planned.flatMap((p) => p?.legs.map((l) => l.accountId) ?? []),
  );
  const postings = ends.map(({ ctx, row, ending }, i) => {
    const legs = planned[i]?.legs ?? [];
    if (legs.length === 0) return undefined;
    const kind = ending.status === 'completed' && ending.funding ? 'collection_fee' : 'collection';
    const metadata = { collection_id: row.id, fee: String(planned[i]!.fee) };
    const result = book.tryPost(ctx, { kind, reference: row.id, metadata, legs });
    return result.ok ? result.posting : ledger.insufficientFunds();
  });
  return inOneStatement(writes ?? trx, async (set) => {
    await book.flush(set);
    // Account transactions only where money moved (a fee-free funded collection moves nothing more).
    const moving = ends.flatMap((e, i) => {
      const posting = postings[i];
      if (!posting || posting instanceof AppError) return [];
      const movement = { reference: e.row.id, clientReference: e.row.client_reference, posting, sides: planned[i]!.sides };
      return [{ i, ctx: e.ctx, movement }];
    });
    const txs = await transactions.recordMovements(set, moving);
    const transactionOf = new Map(moving.map((m, k) => [m.i, txs[k]![0]!.id]));
    const ended = ends.map((e, i) => {
      const posting = postings[i];
      if (posting instanceof AppError) return posting;
      const booked = { transactionId: transactionOf.get(i) ?? null, ledgerTransactionId: posting?.id ?? null };
      const patch = endedColumns(e.ending, planned[i]?.fee ?? 0n, booked);
      return { ...e, patch, row: { ...e.row, ...patch } };
    });
    const done = ended.flatMap((x) => (x instanceof AppError ? [] : [x]));
    await repo.endCollections(
      set,
      done.map(({ ctx, row, patch }) => ({ ctx, id: row.id, patch })),
    );
    await recordEvents(
      set,
      done.map(({ ctx, d, row, patch }) => ({ ctx, eventType: EVENTS[patch.status], data: toResponse(d, row) })),
    );
    return ended.map((x) => (x instanceof AppError ? x : x.row));
  });
}

/**
 * endCollections over a batch's requests as decided in arrival order: each collection to end, or
 * that request's refusal. Returns one result per request, in order; a refusal stays its own.
 */
export async function endDecided(trx: Trx, decided: (End | AppError)[], writes?: WriteSet): Promise<(repo.CollectionRow | AppError)[]> {
  const ended = await endCollections(
    trx,
    decided.flatMap((x) => (x instanceof AppError ? [] : [x])),
    writes,
  );
  let k = 0;
  return decided.map((x) => (x instanceof AppError ? x : ended[k++]!));
}

/** A pending collection locked for this transaction: 404 unknown, 409 already ended. */
async function lockPending(trx: Trx, ctx: Scope, id: string, action: string): Promise<repo.CollectionRow> {
  const row = await repo.findCollection(trx, ctx, id, 'update');
  if (!row) throw notFound('Collection');
  if (row.status !== 'pending') throw notPending(row, action);
  return row;
}

/** One collection ended alone (a batch of one): its response, or its refusal thrown. */
async function endAlone(trx: Trx, end: End) {
  const [row] = await endCollections(trx, [end]);
  if (row instanceof AppError) throw row;
  return toResponse(end.d, row!);
}

async function expireCollection(trx: Trx, ctx: Scope, d: Deps, id: string, reason = 'The payer did not pay in time') {
  const row = await lockPending(trx, ctx, id, 'expired');
  return endAlone(trx, { ctx, d, row, ending: { status: 'expired', reason } });
}

/**
 * The expiry job: pending collections past `expires_at` (at the timeline's time, among the
 * environments it handles) expire, in the tick's transaction (one per batch).
 */
export async function expireDueCollections(trx: Trx, d: Deps, batch = 50, t: Timeline = REAL_TIME): Promise<boolean> {
  const due = await repo.dueForExpiry(trx, batch, t);
  for (const c of due) await expireCollection(trx, { tenantId: c.tenant_id, environment: c.environment as Environment }, d, c.id);
  return due.length === batch;
}

/**
 * The inbound bank transfer path (sandbox funding) calls this first, before it credits the
 * account: the pending bank-transfer collection into `accountId` that `reference` names, locked.
 * Locked first, as every ending takes its locks (collection, accounts, balances): locked after
 * the funding's balance rows, a simulation ending the same collection deadlocked with it.
 */
export async function lockInboundCollection(trx: Trx, ctx: Scope, accountId: string, reference: string) {
  const row = await repo.findByPaymentReference(trx, ctx, accountId, reference);
  return row?.status === 'pending' && row.method === 'bank_transfer' ? row : undefined;
}

/**
 * After the funding credited the account: a payment of the collection's amount completes it (and
 * its fee moves); another amount leaves it pending, a plain funding.
 */
export async function settleInboundTransfer(
  trx: Trx,
  ctx: Scope,
  d: Deps,
  row: repo.CollectionRow,
  payment: { amount: bigint; transactionId: string; ledgerTransactionId: string },
): Promise<boolean> {
  if (row.amount !== payment.amount) return false;
  const funding = { transactionId: payment.transactionId, ledgerTransactionId: payment.ledgerTransactionId };
  await endAlone(trx, { ctx, d, row, ending: { status: 'completed', detailedStatus: 'completed', funding } });
  return true;
}

export type SimulationAction = 'complete' | 'fail' | 'expire';

/** A sandbox simulation of how a pending collection ends. */
export interface SimulationRequest {
  ctx: Scope;
  d: Deps;
  id: string;
  action: SimulationAction;
  reason: string | null;
}

const VERB = { complete: 'completed', fail: 'failed', expire: 'expired' } as const;

function simulatedEnding(action: SimulationAction, reason: string | null): Ending {
  if (action === 'complete') return { status: 'completed', detailedStatus: 'completed' };
  if (action === 'fail')
    return {
      status: 'failed',
      detailedStatus: 'provider_failed',
      code: 'payer_declined',
      reason: reason ?? 'The payer declined the payment',
    };
  return { status: 'expired', reason: reason ?? 'The payer did not pay in time' };
}

/**
 * Sandbox: the payer pays, fails or never pays, for many collections as ONE unit (concurrent
 * simulations are gathered like transfers): the collections locked set-wise, then each checked
 * in arrival order (404 unknown, 409 already ended, also by an earlier item of the batch), then
 * ended together (endCollections). One outcome per request, in order.
 */
export async function simulateCollections(
  trx: Trx,
  reqs: SimulationRequest[],
  writes?: WriteSet,
  locked?: Map<string, repo.CollectionRow>,
): Promise<ItemOutcome<ReturnType<typeof toResponse>>[]> {
  const sandbox = reqs.filter((r) => r.ctx.environment === 'sandbox');
  const rows =
    locked ??
    (await lockCollectionsOf(
      trx,
      sandbox.map((r) => ({ ctx: r.ctx, id: r.id })),
    ));
  // What an earlier item of the batch ends a collection as: a later one finds it ended.
  const endedAs = new Map<string, repo.CollectionStatus>();
  const checked = reqs.map((r): End | AppError => {
    if (r.ctx.environment !== 'sandbox') return notFound('Route');
    const row = rows.get(`${scopeKey(r.ctx)}:${r.id}`);
    if (!row) return notFound('Collection');
    const status = endedAs.get(row.id) ?? row.status;
    if (status !== 'pending') return notPending({ ...row, status }, VERB[r.action]);
    const ending = simulatedEnding(r.action, r.reason);
    endedAs.set(row.id, ending.status);
    return { ctx: r.ctx, d: r.d, row, ending };
  });
  const ended = await endDecided(trx, checked, writes);
  return ended.map((result, i) =>
    result instanceof AppError ? { ok: false, error: result } : { ok: true, data: toResponse(reqs[i]!.d, result) },
  );
}

/**
 * The rows a collection's batch locks that its request names, for the batcher (db/batcher.ts
 * `touches`): the collection, and its business's rows that every completion moves (the settlement
 * and fee accounts, found only once the collection is read, so named for the business as a
 * whole). Beside a running batch, a spare lane then takes other businesses' collections.
 */
export const collectionRowsNamed = (ctx: Scope, id: string): string[] => [id, `${scopeKey(ctx)}:collections`];

/**
 * The collections' lock of a batch of one sandbox business's simulations, as a statement the
 * caller sends right behind the idempotency claim (http/idempotency-batch.ts), and how to read its
 * rows (simulateCollections' `locked`); undefined for any other batch, which simulateCollections
 * locks itself after the claim, business by business.
 */
export function planSimulationLocks(trx: Trx, reqs: SimulationRequest[]): LockPlan<Map<string, repo.CollectionRow>> | undefined {
  const ctx = soleScope(reqs);
  if (!ctx || ctx.environment !== 'sandbox') return undefined;
  const lock = lockCollectionsStatement(
    trx,
    ctx,
    reqs.map((r) => r.id),
  );
  return { statements: [lock.statement], read: ([rows]: unknown[][]) => lock.read(rows!) };
}

/**
 * lockCollectionsOf for one business as a statement, for a caller that sends it with others
 * (behind the idempotency claim), and how to read its rows: keyed as lockCollectionsOf keys them.
 */
export function lockCollectionsStatement(trx: Trx, ctx: Scope, ids: string[]) {
  const key = scopeKey(ctx);
  return {
    statement: repo.lockCollectionsQuery(trx, ctx, ids).compile(),
    read: (rows: unknown[]) => new Map((rows as repo.CollectionRow[]).map((row) => [`${key}:${row.id}`, row])),
  };
}

/** Collections locked for a batch, one statement per business (ascending id), by scopeKey:id. */
export async function lockCollectionsOf(trx: Trx, wanted: { ctx: Scope; id: string }[]): Promise<Map<string, repo.CollectionRow>> {
  const rows = new Map<string, repo.CollectionRow>();
  for (const { key, ctx, values } of groupByScope(wanted.map((w) => ({ ctx: w.ctx, values: [w.id] })))) {
    for (const row of await repo.lockCollections(trx, ctx, values)) rows.set(`${key}:${row.id}`, row);
  }
  return rows;
}
