import type { Config } from '../../config.js';
import type { Db, Trx } from '../../db/client.js';
import { inOneStatement } from '../../db/write-set.js';
import { groupByScope, scopeKey, type Environment } from '../../core/context.js';
import { AppError, refusalOf } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import { eachOnItsOwn, type Job } from '../../core/job.js';
import { keyedOnce } from '../../lib/memo.js';
import * as accounts from '../accounts/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import { rateFromDb } from '../../lib/decimal.js';
import { fxCustomerRate } from '../pricing/service.js';
import { conversionAccounts } from './batch.js';
import {
  conversionSides,
  conversionTerms,
  creditedAccountId,
  destinationCurrency,
  executedColumns,
  executeConversion,
  priceOrder,
  sourceCurrency,
  toOrderResponse,
  type ConversionTerms,
  type Executed,
  type Parties,
  type Priced,
} from './execution.js';
import { closePendingOrder } from './orders.js';
import * as repo from './repo.js';
import type { RateBook } from '../../rails/fx.js';
import { rateBook } from './service.js';
import { recheckInstruction } from './ssi.js';
import { REAL_TIME, timelineMs, type Timeline } from '../../core/clock.js';

export type LimitOutcome = 'idle' | 'waiting' | 'completed' | 'expired' | 'rejected';

/** Why an order's accounts no longer let it execute (gone, frozen, deleted), if they don't. */
function accountsBlock(
  source: accounts.MovementAccountRow | undefined,
  destination: accounts.MovementAccountRow | undefined,
): string | null {
  if (!source || !destination) return 'account_not_found';
  try {
    accounts.assertCanDebit(source, 'source_id');
    accounts.assertCanCredit(destination, 'destination_id');
  } catch (err) {
    if (err instanceof AppError) return err.code;
    throw err;
  }
  return null;
}

/**
 * Why a limit order can no longer execute (its accounts, or its settlement instruction, changed
 * while it waited), if it can't.
 */
async function blocked(
  trx: Trx,
  order: repo.OrderRow,
  source: accounts.MovementAccountRow | undefined,
  destination: accounts.MovementAccountRow | undefined,
): Promise<string | null> {
  const reason = accountsBlock(source, destination);
  if (reason || order.destination_type !== 'ssi') return reason;
  const refused = await refusalOf(() => recheckInstruction(trx, scopeOf(order), order, destinationCurrency(order)));
  return refused instanceof AppError ? refused.code : null;
}

/** Executes a limit order whose target was reached: the hold is voided and the conversion booked, together. */
async function execute(trx: Trx, config: Config, order: repo.OrderRow, mid: bigint, rate: bigint): Promise<LimitOutcome> {
  const scope = { tenantId: order.tenant_id, environment: order.environment as Environment };
  const credited = creditedAccountId(order);
  const locked = await accounts.lockForMovement(trx, scope, [order.source_id, credited]);
  const source = locked.get(order.source_id);
  const destination = locked.get(credited);
  const reason = await blocked(trx, order, source, destination);
  if (reason) {
    await closePendingOrder(trx, scope, order, 'rejected', reason);
    return 'rejected';
  }
  let priced: Priced;
  try {
    priced = priceOrder(order, rate, order.fee_bps);
  } catch (err) {
    // A much better rate than the target can push the proceeds past the amount limit.
    if (!(err instanceof AppError)) throw err;
    await closePendingOrder(trx, scope, order, 'rejected', err.code);
    return 'rejected';
  }
  // The hold reserved the most this order can cost (sell: amount; buy: the cost at the target
  // rate, which the current better-or-equal rate never exceeds), so the posting cannot fail.
  if (order.hold_id) await ledger.voidHold(trx, scope, order.hold_id);
  await executeConversion(trx, scope, { config }, order, source!, destination!, { ...priced, mid, rate });
  return 'completed';
}

type Due = 'expire' | { mid: bigint; rate: bigint } | null;

/** What a waiting order needs now: expiry, execution at the current rate, or nothing. */
function dueAction(order: repo.OrderRow, book: RateBook, now: number): Due {
  if (order.expires_at && order.expires_at.getTime() <= now) return 'expire';
  const mid = book.mid(order.base, order.quote);
  if (!mid || order.target_rate === null) return null;
  const target = rateFromDb(order.target_rate);
  const rate = fxCustomerRate(mid.mid, order.spread_bps, order.side);
  return (order.side === 'sell' ? rate >= target : rate <= target) ? { mid: mid.mid, rate } : null;
}

const scopeOf = (o: repo.OrderRow) => ({ tenantId: o.tenant_id, environment: o.environment as Environment });

/** The rate book of each order's business, read once per business in `trx`. */
function rateBooks(trx: Trx): (order: repo.OrderRow) => Promise<RateBook> {
  const books = keyedOnce<RateBook>();
  return (order) => books(scopeKey(scopeOf(order)), () => rateBook(trx, scopeOf(order)));
}

/**
 * One cheap scan transaction: claims up to `limit` waiting orders not checked since `since`
 * (FOR UPDATE SKIP LOCKED, so workers split the queue), notes them all checked, and returns the
 * ids of those that are due: `due` settle together (settleDueOrders), `alone` each in its own
 * transaction (an order settling to an instruction pays out in the same transaction).
 */
export async function scanWaitingOrders(
  db: Db,
  since: Date,
  limit: number,
  t: Timeline = REAL_TIME,
): Promise<{ claimed: number; due: string[]; alone: string[] }> {
  return db.transaction().execute(async (trx) => {
    const orders = await repo.claimWaitingOrders(trx, since, limit, t);
    const bookOf = rateBooks(trx);
    const due: string[] = [];
    const alone: string[] = [];
    for (const order of orders) {
      if (dueAction(order, await bookOf(order), timelineMs(t))) (order.destination_type === 'ssi' ? alone : due).push(order.id);
    }
    await repo.markChecked(
      trx,
      orders.map((o) => o.id),
    );
    return { claimed: orders.length, due, alone };
  });
}

/** A due order decided under its lock: expired, rejected (why), or executing at its price. */
type Decision = { order: repo.OrderRow; hold: ledger.Hold | undefined } & (
  | { status: 'expired' }
  | { status: 'rejected'; reason: string }
  | { status: 'completed'; p: Executed; between: Pick<Parties, 'source' | 'destination'> }
);

/** An order the batch ends, with the columns it ends with and the event that says so (none for a rejection). */
interface Closing {
  order: repo.OrderRow;
  ending: repo.OrderEnding;
  event?: 'fx.order.completed' | 'fx.order.expired';
}

const UNEXECUTED = { rate: null, mid_rate: null, converted_amount: null, fee: null, ledger_transaction_id: null, transaction_id: null };

/**
 * Settles due limit orders together, in ONE transaction (docs/money-path.md), each re-checked
 * under its row lock as settleLimitOrder checks one: expired after expires_at, executed when the
 * customer rate reached its target, rejected when its accounts changed or the price outgrew the
 * limits, or left waiting (the rate moved back). The holds are voided and the conversions posted
 * in memory against the locked balances (ledger PostingBatch: a hold's release and its
 * conversion go together or not at all), and everything is written in one statement: balances,
 * holds, ledger rows, account transactions, the orders and their events. Orders settling to an
 * instruction are not for this path (scanWaitingOrders sets them apart). Lock order: orders →
 * accounts (share) → holds → (fee and fx_position accounts found) → balance rows, each
 * ascending, as a lone order and a cancel (order → hold → balance rows). Returns each order's
 * outcome by id (absent: no longer pending, or another worker holds it).
 */
export async function settleDueOrders(trx: Trx, ids: string[], t: Timeline = REAL_TIME): Promise<Map<string, LimitOutcome>> {
  const outcomes = new Map<string, LimitOutcome>();
  const due = await claimDue(trx, ids, t, outcomes);
  const decisions = await decideUnderLocks(trx, due);
  const others = conversionAccounts(trx);
  const planned = await planConversions(others, decisions);
  const book = await others.openBook([
    ...[...planned.values()].flatMap((x) => x.legs.map((l) => l.accountId)),
    ...decisions.flatMap(({ hold }) => (hold ? [hold.debitAccountId, hold.creditAccountId] : [])),
  ]);
  const { closings, executed } = postDecisions(book, decisions, planned, outcomes);
  await others.createUsed(book);
  await recordSettlements(trx, book, executed, closings);
  return outcomes;
}

/** A claimed order found due, and what it is due for. */
type DueOrder = { order: repo.OrderRow; action: Exclude<Due, null> };

/** A conversion's parties and its legs, found before the book opens (the book locks every account they touch). */
type Plan = { parties: Parties; legs: ledger.Leg[] };

/** An order the book accepted the conversion of, with what its writes need. */
type ExecutedOrder = { order: repo.OrderRow; p: Executed; parties: Parties; terms: ConversionTerms; posting: ledger.PostedTransaction };

/** Claims the still-pending orders (row locks, ascending) and sets apart the due ones; the rest are noted waiting. */
async function claimDue(trx: Trx, ids: string[], t: Timeline, outcomes: Map<string, LimitOutcome>): Promise<DueOrder[]> {
  const orders = await repo.claimPendingOrders(trx, ids);
  const bookOf = rateBooks(trx);
  const due: DueOrder[] = [];
  for (const order of orders) {
    if (order.destination_type === 'ssi') throw new ledger.LedgerInvariantError(`order ${order.id} settles alone`);
    const action = dueAction(order, await bookOf(order), timelineMs(t));
    if (action) due.push({ order, action });
    else outcomes.set(order.id, 'waiting');
  }
  return due;
}

/** Locks the executing orders' accounts (share), then every due order's hold, and decides each order under them. */
async function decideUnderLocks(trx: Trx, due: DueOrder[]): Promise<Decision[]> {
  const locked = await accounts.lockForMovements(
    trx,
    due.flatMap(({ order, action }) =>
      action === 'expire' ? [] : [{ ctx: scopeOf(order), ids: [order.source_id, creditedAccountId(order)] }],
    ),
  );
  const holds = new Map<string, ledger.Hold>();
  for (const { ctx, values } of groupByScope(
    due.map(({ order }) => ({ ctx: scopeOf(order), values: order.hold_id ? [order.hold_id] : [] })),
  )) {
    for (const [id, hold] of await ledger.lockPendingHolds(trx, ctx, values)) holds.set(id, hold);
  }
  return due.map(({ order, action }) => decide(order, holds, locked, action));
}

/** Plans each executing order's conversion (fee account, positions found or made), in decision order. */
async function planConversions(others: ReturnType<typeof conversionAccounts>, decisions: Decision[]): Promise<Map<Decision, Plan>> {
  const planned = new Map<Decision, Plan>();
  for (const d of decisions) {
    if (d.status !== 'completed') continue;
    const currencies = { given: sourceCurrency(d.order), received: destinationCurrency(d.order) };
    planned.set(d, await others.plan(scopeOf(d.order), d.between, currencies, d.p));
  }
  return planned;
}

/** In memory, against the locked balances: releases the holds of orders that end unexecuted, posts the conversions. */
function postDecisions(
  book: ledger.PostingBatch,
  decisions: Decision[],
  planned: Map<Decision, Plan>,
  outcomes: Map<string, LimitOutcome>,
): { closings: Closing[]; executed: ExecutedOrder[] } {
  const closings: Closing[] = [];
  const executed: ExecutedOrder[] = [];
  for (const d of decisions) {
    const release = d.hold ? [d.hold] : [];
    if (d.status !== 'completed') {
      book.releaseHolds(scopeOf(d.order), release);
      const ending = { id: d.order.id, status: d.status, rejection_reason: d.status === 'rejected' ? d.reason : null, ...UNEXECUTED };
      closings.push({ order: d.order, ending, ...(d.status === 'expired' ? { event: 'fx.order.expired' as const } : {}) });
      outcomes.set(d.order.id, d.status);
      continue;
    }
    const { parties, legs } = planned.get(d)!;
    const terms = conversionTerms(d.order, parties.source.currency, d.p);
    // The hold reserved the most this order can cost (sell: amount; buy: the cost at the target
    // rate, which the current better-or-equal rate never exceeds), so this is not refused; were it,
    // the order would keep its hold and wait for the next pass.
    const result = book.tryPost(scopeOf(d.order), { kind: 'fx', reference: d.order.id, metadata: terms, legs }, release);
    if (!result.ok) {
      outcomes.set(d.order.id, 'waiting');
      continue;
    }
    executed.push({ order: d.order, p: d.p, parties, terms, posting: result.posting });
    outcomes.set(d.order.id, 'completed');
  }
  return { closings, executed };
}

/** Writes the whole batch in one statement: balances, holds, ledger rows, account transactions, the orders and their events. */
async function recordSettlements(trx: Trx, book: ledger.PostingBatch, executed: ExecutedOrder[], closings: Closing[]): Promise<void> {
  await inOneStatement(trx, async (set) => {
    await book.flush(set);
    const txs = await transactions.recordMovements(
      set,
      executed.map((x) => ({
        ctx: scopeOf(x.order),
        movement: { reference: x.order.id, posting: x.posting, sides: conversionSides(x.order, x.parties, x.p, x.terms) },
      })),
    );
    executed.forEach((x, k) => {
      const columns = executedColumns(x.p, x.terms, x.posting.id, txs[k]![0]?.id ?? null);
      closings.push({ order: x.order, ending: { id: x.order.id, rejection_reason: null, ...columns }, event: 'fx.order.completed' });
    });
    await repo.endOrders(
      set,
      closings.map((c) => c.ending),
    );
    // Each event carries the order as the database now holds it (stamped with the transaction's now()).
    const at = book.now;
    await recordEvents(
      set,
      closings.flatMap(({ order, ending, event }) => {
        if (!event) return [];
        const row = { ...order, ...ending, executed_at: ending.status === 'completed' ? at : null, updated_at: at };
        return [{ ctx: scopeOf(order), eventType: event, data: toOrderResponse(row) }];
      }),
    );
  });
}

/** How a due order ends, judged as settleLimitOrder judges it alone (its ssi recheck aside). */
function decide(
  order: repo.OrderRow,
  holds: Map<string, ledger.Hold>,
  locked: Map<string, Map<string, accounts.MovementAccountRow>>,
  action: Exclude<Due, null>,
): Decision {
  const hold = order.hold_id ? holds.get(order.hold_id) : undefined;
  if (order.hold_id && !hold) throw new ledger.LedgerInvariantError(`the hold of order ${order.id} is not pending`);
  if (action === 'expire') return { order, hold, status: 'expired' };
  const rows = locked.get(scopeKey(scopeOf(order)));
  const [source, destination] = [rows?.get(order.source_id), rows?.get(creditedAccountId(order))];
  const reason = accountsBlock(source, destination);
  if (reason) return { order, hold, status: 'rejected', reason };
  try {
    const p = { ...priceOrder(order, action.rate, order.fee_bps), mid: action.mid, rate: action.rate };
    return { order, hold, status: 'completed', p, between: { source: source!, destination: destination! } };
  } catch (err) {
    // A much better rate than the target can push the proceeds past the amount limit.
    if (err instanceof AppError) return { order, hold, status: 'rejected', reason: err.code };
    throw err;
  }
}

/**
 * Settles one due order in its own transaction, re-checked under its row lock (the rate may have
 * moved back, or another worker or a cancel got there first): expires it after expires_at, or
 * executes it when the customer rate has reached target_rate (sell: rate >= target; buy: rate <= target).
 */
export async function settleLimitOrder(db: Db, config: Config, id: string, t: Timeline = REAL_TIME): Promise<LimitOutcome> {
  try {
    return await db.transaction().execute(async (trx) => {
      const order = await repo.claimPendingOrder(trx, id);
      if (!order) return 'idle';
      const action = dueAction(order, await rateBook(trx, scopeOf(order)), timelineMs(t));
      if (action === 'expire') {
        await closePendingOrder(trx, scopeOf(order), order, 'expired');
        return 'expired';
      }
      return action ? execute(trx, config, order, action.mid, action.rate) : 'waiting';
    });
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return refuseSettlement(db, id, err);
  }
}

/**
 * An ssi order whose payout was refused at execution (a payout limit, the customer's KYC limits):
 * that transaction wrote nothing; this one rejects the order (reason: the refusal's code) and
 * releases its hold, so it does not come back every second. Other orders rethrow as before.
 */
async function refuseSettlement(db: Db, id: string, err: AppError): Promise<LimitOutcome> {
  return db.transaction().execute(async (trx) => {
    const order = await repo.claimPendingOrder(trx, id);
    if (!order) return 'idle';
    if (order.destination_type !== 'ssi') throw err;
    await closePendingOrder(trx, scopeOf(order), order, 'rejected', `settlement_refused: ${err.code}`);
    return 'rejected';
  });
}
/** Waiting orders per scan, and so the most one batch settles. */
export const LIMIT_ORDER_SCAN = 200;

/**
 * Settles the due orders of one scan: those that can together (settleDueOrders), then each of
 * the others alone. Should the batch fail (a deadlock, a hold in an unexpected state), its orders
 * are settled one by one instead, so one order's trouble never holds back the rest, and the
 * failing one reports its own error (the worker logs it).
 */
export async function settleDue(db: Db, config: Config, due: string[], alone: string[], t: Timeline = REAL_TIME): Promise<void> {
  let one = alone;
  if (due.length > 0) {
    try {
      await db.transaction().execute((trx) => settleDueOrders(trx, due, t));
    } catch {
      one = [...due, ...alone];
    }
  }
  // An order that fails alone does not stop the ones after it; the first failure is reported.
  await eachOnItsOwn(one, (id) => settleLimitOrder(db, config, id, t));
}

/** One whole pass over the timeline's waiting orders (a test clock's step): every one looked at once, the due ones settled. */
export async function settleWaitingOrders(db: Db, config: Config, t: Timeline): Promise<void> {
  const since = await repo.databaseNow(db);
  for (;;) {
    const { claimed, due, alone } = await scanWaitingOrders(db, since, LIMIT_ORDER_SCAN, t);
    await settleDue(db, config, due, alone, t);
    if (claimed < LIMIT_ORDER_SCAN) return;
  }
}

/**
 * The background job: each pass looks at every waiting order once, LIMIT_ORDER_SCAN per scan (a full batch
 * says "more", so the loop continues at once), and settles the due ones.
 */
export function limitOrderJob(db: Db, config: Config): Job {
  let since: Date | undefined;
  return {
    name: 'fx-limit-orders',
    intervalMs: 1_000,
    async tick() {
      // A continuing pass keeps its start time, so a long queue is walked once, not re-read.
      since ??= await repo.databaseNow(db);
      const { claimed, due, alone } = await scanWaitingOrders(db, since, LIMIT_ORDER_SCAN);
      await settleDue(db, config, due, alone);
      if (claimed < LIMIT_ORDER_SCAN) since = undefined;
      return claimed === LIMIT_ORDER_SCAN;
    },
  };
}
