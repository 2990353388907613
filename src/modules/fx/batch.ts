import type { Config } from '../../config.js';
import type { Trx } from '../../db/client.js';
import { pipelined, type LockPlan } from '../../db/pipeline.js';
import { inOneStatement, type WriteSet } from '../../db/write-set.js';
import { groupByScope, scopeKey, soleScope, type RequestContext, type Scope } from '../../core/context.js';
import { AppError, refusalOf, type ItemOutcome } from '../../core/errors.js';
import * as ledger from '../../ledger/index.js';
import { newId } from '../../lib/ids.js';
import { keyedOnce } from '../../lib/memo.js';
import type { RateBook } from '../../rails/fx.js';
import * as accounts from '../accounts/service.js';
import * as approvals from '../approvals/service.js';
import { existingCustomerIds } from '../customers/service.js';
import * as transactions from '../transactions/service.js';
import { recordEvents } from '../webhooks/service.js';
import {
  conversionInput,
  conversionSides,
  conversionTerms,
  destinationCurrency,
  executedColumns,
  priceOrder,
  sourceCurrency,
  toOrderResponse,
  type ConversionTerms,
  type Executed,
  type Parties,
} from './execution.js';
import {
  checkAccounts,
  insufficientForOrder,
  marketRate,
  newOrder,
  orderPricing,
  resolveAccounts,
  termsFromBody,
  termsOfQuote,
  type NewOrder,
  type Terms,
} from './orders.js';
import * as repo from './repo.js';
import type { CreateOrderBody, OrderResponse } from './schema.js';
import { fxPricing } from '../pricing/service.js';
import { legsThrough, lockQuotes, quoteExpired, quoteNotFound, quoteUsed, rateBook, rateBookPlan, type QuoteState } from './service.js';

/**
 * FX market orders on the batch path (docs/money-path.md): concurrent orders share one
 * transaction and a fixed number of statements, each decided on its own in arrival order, so one
 * order's insufficient_funds or used quote never fails its neighbours. The steps are a lone
 * order's (orders.ts createOrder): lock the quotes → terms → accounts (share-locked) → price →
 * post in memory against the locked balances (ledger PostingBatch) → record everything in one
 * statement: balances, ledger rows, account transactions, the orders (completed), the quotes'
 * redemptions and fx.order.completed events.
 */
export interface OrderRequest {
  ctx: RequestContext;
  config: Config;
  body: CreateOrderBody;
}

export type OrderOutcome = ItemOutcome<OrderResponse>;

/**
 * Whether an order takes the batch path: one that executes at once into an account. Limit
 * orders, orders waiting for approval and orders settling to an instruction (a payout in the
 * same transaction) take the lone path, as does anything whose approval settings do not parse
 * (the lone path answers that).
 */
export function takesBatchPath(ctx: RequestContext, body: CreateOrderBody): boolean {
  if (body.destination_type === 'ssi') return false;
  if (body.quote_id === undefined && body.order_type !== 'market') return false;
  try {
    return !approvals.policyOf(ctx).fxOrders;
  } catch {
    return false;
  }
}

/**
 * The rows an order's batch locks that its request names, for the batcher (db/batcher.ts
 * `touches`): its quote, its accounts, and its business's fx_position account in each currency of
 * its pair, which every order of the business in that currency moves. A quoted order's pair is
 * the quote's, so its positions go unnamed: a hint, and the database's locks still decide.
 */
export function rowsNamed({ ctx, body }: OrderRequest): string[] {
  const ids = [body.quote_id, body.source_id, body.destination_id].filter((id) => id !== undefined);
  const positions = body.pair ? [body.pair.base, body.pair.quote].map((currency) => `${scopeKey(ctx)}:fx_position:${currency}`) : [];
  return [...ids, ...positions];
}

/** An order whose terms and accounts are known. */
interface Staged {
  i: number;
  req: OrderRequest;
  id: string;
  terms: Terms;
  ids: { sourceId: string; destinationId: string };
}

/** An order whose accounts passed its checks, priced. */
interface Checked extends Staged {
  source: accounts.MovementAccountRow;
  destination: accounts.MovementAccountRow;
  order: NewOrder;
  p: Executed;
}

/** What a checked order would post. */
interface Planned extends Checked {
  parties: Parties;
  legs: ledger.Leg[];
}

interface Accepted extends Planned {
  booked: ConversionTerms;
  posting: ledger.PostedTransaction;
}

/** What an FX batch reads and locks first, when it knows all of it before reading a row (planFirstLocks). */
export interface FxFirstLocks {
  /** The business's rate book. */
  book: RateBook;
  /** The accounts the orders name, share-locked, by scopeKey. */
  locked: Map<string, Map<string, accounts.MovementAccountRow>>;
  /** The business, and its fx_position account in each currency looked for (undefined: it has none yet). */
  ctx: Scope;
  positions: Map<string, string | undefined>;
  /** Every balance row the orders move, locked. */
  balances: ledger.LockedAhead;
}

/**
 * The batch's first reads and locks, when it knows before reading a row everything it touches:
 * one business, market orders without a quote that name their pair and both accounts, no FX
 * fee. The statements, in the lock order of orderBatch: the rate book (the sandbox's simulated
 * rates), the accounts (share), the fx_position accounts of the pairs' currencies, and every
 * balance row (the positions' found by the statement itself). Undefined otherwise: the batch then
 * reads and locks them one after the other. The caller sends the statements in one round trip,
 * behind the idempotency claim (http/idempotency-batch.ts), or orderBatch sends them itself.
 */
export function planFirstLocks(trx: Trx, reqs: OrderRequest[]): LockPlan<FxFirstLocks> | undefined {
  const ctx = soleScope(reqs);
  if (!ctx) return undefined;
  const { config } = reqs[0]!;
  const known = reqs.every(
    ({ body }) =>
      body.order_type === 'market' &&
      body.quote_id === undefined &&
      body.pair !== undefined &&
      body.source_id !== undefined &&
      body.destination_id !== undefined,
  );
  // A fee goes to the business's Fees account, found (or reserved) only once an order is priced.
  if (!known || fxPricing(ctx.settings, config).feeBps > 0) return undefined;
  const ids = reqs.flatMap(({ body }) => [body.source_id!, body.destination_id!]);
  const currencies = new Set(reqs.flatMap(({ body }) => [body.pair!.base, body.pair!.quote]));
  const rates = rateBookPlan(trx, ctx);
  const accountLock = accounts.lockForMovementStatement(trx, ctx, ids);
  const balances = ledger.systemBalancesAhead(trx, ctx, ids, 'fx_position', [...currencies]);
  return {
    statements: [...(rates.statement ? [rates.statement] : []), accountLock.statement, ...balances.statements],
    read: (rows) => {
      const [rateRows, accountRows, ...balanceRows] = rates.statement ? rows : [[], ...rows];
      const { system, ahead } = balances.read(balanceRows);
      return {
        book: rates.read(rateRows!),
        locked: new Map([[scopeKey(ctx), accountLock.read(accountRows!)]]),
        ctx,
        positions: new Map([...currencies].map((currency) => [currency, system.get(currency)])),
        balances: ahead,
      };
    },
  };
}

/** The batch's first reads and locks (planFirstLocks) in one round trip, when known ahead. */
async function firstLocks(trx: Trx, reqs: OrderRequest[]): Promise<FxFirstLocks | undefined> {
  const plan = planFirstLocks(trx, reqs);
  return plan && plan.read(await pipelined(trx, ...plan.statements));
}

/** Every quote the batch names, locked, one statement per business (ascending id), by scopeKey:id. */
async function lockQuotesOf(trx: Trx, reqs: OrderRequest[]): Promise<Map<string, QuoteState>> {
  const states = new Map<string, QuoteState>();
  const named = reqs.map(({ ctx, body }) => ({ ctx, values: body.quote_id ? [body.quote_id] : [] }));
  for (const { key, ctx, values } of groupByScope(named)) {
    if (values.length === 0) continue;
    for (const [id, state] of await lockQuotes(trx, ctx, values)) states.set(`${key}:${id}`, state);
  }
  return states;
}

/** A lone order's quote checks, in its order: 404 unknown, 400 contradicting terms, 409 used, 409 expired. */
function termsOfLockedQuote(body: CreateOrderBody, state: QuoteState | undefined): Terms {
  if (!state) throw quoteNotFound();
  const terms = termsOfQuote(body, state.quote);
  if (state.used) throw quoteUsed();
  if (!state.live) throw quoteExpired();
  return terms;
}

/**
 * FX market orders as ONE unit of work in `trx`: one outcome per request, in order. Lock order:
 * quotes (update) → accounts (share) → (fee and fx_position accounts found or created) →
 * balance rows (update), each ascending, as a lone order; nothing here takes a spending lock
 * (a conversion between a customer's own accounts counts toward no limit). The writes go into
 * `writes` when the caller gives one (sent with its own before it commits), else here as one
 * statement.
 */
export async function orderBatch(trx: Trx, reqs: OrderRequest[], writes?: WriteSet, first?: FxFirstLocks): Promise<OrderOutcome[]> {
  const outcomes: (OrderOutcome | undefined)[] = reqs.map(() => undefined);
  const refuse = (i: number, error: AppError) => (outcomes[i] = { ok: false, error });

  const ahead = first ?? (await firstLocks(trx, reqs));
  // A batch planned ahead names no quote.
  const quotes = ahead ? new Map<string, QuoteState>() : await lockQuotesOf(trx, reqs);
  const books = keyedOnce<RateBook>();
  if (ahead) await books(scopeKey(ahead.ctx), async () => ahead.book);
  const staged: Staged[] = [];
  for (const [i, req] of reqs.entries()) {
    const s = await refusalOf(async () => {
      const { ctx, body } = req;
      const terms = body.quote_id
        ? termsOfLockedQuote(body, quotes.get(`${scopeKey(ctx)}:${body.quote_id}`))
        : termsFromBody(await books(scopeKey(ctx), () => rateBook(trx, ctx)), body, req.config);
      // Reads only when the body leaves an account to its default.
      const { sourceId, destinationId } = await resolveAccounts(trx, ctx, body, terms);
      return { i, req, id: newId(), terms, ids: { sourceId, destinationId } };
    });
    if (s instanceof AppError) refuse(i, s);
    else staged.push(s);
  }

  const locked =
    ahead?.locked ??
    (await accounts.lockForMovements(
      trx,
      staged.map((s) => ({ ctx: s.req.ctx, ids: [s.ids.sourceId, s.ids.destinationId] })),
    ));
  const customers = await customersNamed(trx, staged);
  const checked: Checked[] = [];
  for (const s of staged) {
    const key = scopeKey(s.req.ctx);
    const c = await refusalOf(() => {
      const { body, ctx, config } = s.req;
      const named = body.customer_id === undefined || customers.get(key)!.has(body.customer_id);
      const { source, destination } = checkAccounts(body, s.terms, s.ids, locked.get(key)!, named);
      const pricing = orderPricing(ctx, config, s.terms);
      const rate = marketRate(s.terms, pricing.spreadBps);
      const p = { ...priceOrder(s.terms, rate, pricing.feeBps), mid: s.terms.mid, rate };
      return { ...s, source, destination, p, order: newOrder(ctx, s.id, s.terms, { source, destination }, pricing) };
    });
    if (c instanceof AppError) refuse(s.i, c);
    else checked.push(c);
  }

  const others = conversionAccounts(trx, ahead);
  const planned: Planned[] = [];
  for (const c of checked) {
    const currencies = { given: sourceCurrency(c.terms), received: destinationCurrency(c.terms) };
    planned.push({ ...c, ...(await others.plan(c.req.ctx, c, currencies, c.p)) });
  }
  const book = await others.openBook(
    planned.flatMap((x) => x.legs.map((l) => l.accountId)),
    ahead?.balances,
  );
  const accepted = decide(planned, book, refuse);
  await others.createUsed(book);
  const answers = await inOneStatement(writes ?? trx, (set) => record(set, book, accepted));
  accepted.forEach((a, k) => (outcomes[a.i] = { ok: true, data: answers[k]! }));
  return outcomes.map((o) => o!);
}

/**
 * The accounts a batch's conversions need beyond their own, found once per business and currency
 * (market orders here, due limit orders in worker.ts). A missing fx_position account gets an
 * id now and is created with the batch's writes only if an accepted conversion used it
 * (PostingBatch.addFresh): a refused one leaves nothing behind. So does a missing Fees account
 * (accounts.batchFeeAccounts, created before the writes if used).
 */
export function conversionAccounts(trx: Trx, ahead?: Pick<FxFirstLocks, 'ctx' | 'positions'>) {
  const feeAccounts = accounts.batchFeeAccounts(trx);
  const positions = keyedOnce<string | undefined>();
  const fresh = new Map<string, { ctx: Scope; id: string; currency: string }>();
  const foundAhead = (ctx: Scope, currency: string) =>
    ahead !== undefined && scopeKey(ahead.ctx) === scopeKey(ctx) && ahead.positions.has(currency);
  const position = async (ctx: Scope, currency: string) => {
    const key = `${scopeKey(ctx)}:${currency}`;
    const found = await positions(key, async () =>
      foundAhead(ctx, currency) ? ahead!.positions.get(currency) : ledger.findSystemAccount(trx, ctx, 'fx_position', currency),
    );
    if (found) return found;
    if (!fresh.has(key)) fresh.set(key, { ctx, id: newId(), currency });
    return fresh.get(key)!.id;
  };
  return {
    /** A conversion's parties (with the fee account when it pays a fee) and its legs through the positions. */
    async plan(
      ctx: Scope,
      between: Pick<Parties, 'source' | 'destination'>,
      currencies: { given: string; received: string },
      p: Executed,
    ): Promise<{ parties: Parties; legs: ledger.Leg[] }> {
      const parties = { ...between, feeAccount: p.fee > 0n ? await feeAccounts.of(ctx, currencies.given) : undefined };
      const through = { given: await position(ctx, currencies.given), received: await position(ctx, currencies.received) };
      return { parties, legs: legsThrough(through, conversionInput(parties, p)) };
    },
    /** The batch's book over `accountIds` (locked, or their rows locked `ahead`), with the accounts found missing added unwritten. */
    async openBook(accountIds: string[], lockedAhead?: ledger.LockedAhead): Promise<ledger.PostingBatch> {
      const book = await feeAccounts.openBook(
        accountIds,
        [...fresh.values()].map((f) => f.id),
        lockedAhead,
      );
      for (const f of fresh.values()) book.addFresh(f.ctx, f.id, 'fx_position', f.currency);
      return book;
    },
    /** Creates the Fees accounts an accepted conversion paid into (before the writes). */
    createUsed: (book: ledger.PostingBatch) => feeAccounts.createUsed(book),
  };
}

/** Which customers the batch's bodies name exist, one read per business, by scopeKey. */
async function customersNamed(trx: Trx, staged: Staged[]): Promise<Map<string, Set<string>>> {
  const found = new Map<string, Set<string>>();
  const named = staged.map(({ req }) => ({ ctx: req.ctx, values: req.body.customer_id ? [req.body.customer_id] : [] }));
  for (const { key, ctx, values } of groupByScope(named)) found.set(key, await existingCustomerIds(trx, ctx, values));
  return found;
}

/**
 * Posts each order in memory, in arrival order, against the locked balances: a refused one
 * (funds, or a quote an earlier order of the batch redeemed) changes nothing.
 */
function decide(planned: Planned[], book: ledger.PostingBatch, refuse: (i: number, e: AppError) => void): Accepted[] {
  const redeemed = new Set<string>();
  const accepted: Accepted[] = [];
  for (const x of planned) {
    const quoteKey = x.order.quote_id ? `${scopeKey(x.req.ctx)}:${x.order.quote_id}` : undefined;
    if (quoteKey && redeemed.has(quoteKey)) {
      refuse(x.i, quoteUsed());
      continue;
    }
    const booked = conversionTerms(x.order, x.parties.source.currency, x.p);
    const result = book.tryPost(x.req.ctx, { kind: 'fx', reference: x.id, metadata: booked, legs: x.legs });
    if (!result.ok) {
      refuse(x.i, insufficientForOrder());
      continue;
    }
    if (quoteKey) redeemed.add(quoteKey);
    accepted.push({ ...x, booked, posting: result.posting });
  }
  return accepted;
}

/** The row of an order executed in the batch, as the database will hold it (stamped with the transaction's now()). */
function executedRow(a: Accepted, transactionId: string | null): repo.OrderRow {
  const at = a.posting.createdAt;
  return {
    ...a.order,
    ...executedColumns(a.p, a.booked, a.posting.id, transactionId),
    target_rate: null,
    hold_id: null,
    payout_transfer_id: null,
    rejection_reason: null,
    created_by_user_id: null,
    approved_by_user_id: null,
    approved_at: null,
    rejected_by_user_id: null,
    rejected_at: null,
    executed_at: at,
    expires_at: null,
    checked_at: null,
    created_at: at,
    updated_at: at,
  };
}

/**
 * Adds the writes of every accepted order: postings, account transactions, orders, quote
 * redemptions, events. Returns each order's answer (its event's data).
 */
async function record(writes: WriteSet, book: ledger.PostingBatch, accepted: Accepted[]): Promise<OrderResponse[]> {
  await book.flush(writes);
  if (accepted.length === 0) return [];
  const txs = await transactions.recordMovements(
    writes,
    accepted.map((a) => ({
      ctx: a.req.ctx,
      movement: { reference: a.id, posting: a.posting, sides: conversionSides(a.order, a.parties, a.p, a.booked) },
    })),
  );
  const rows = accepted.map((a, k) => executedRow(a, txs[k]![0]?.id ?? null));
  await repo.insertOrders(writes, rows);
  const uses = accepted.map((a) => ({ ctx: a.req.ctx, values: a.order.quote_id ? [{ quoteId: a.order.quote_id, orderId: a.id }] : [] }));
  for (const { ctx, values } of groupByScope(uses)) await repo.markQuotesUsed(writes, ctx, values);
  const answers = rows.map(toOrderResponse);
  await recordEvents(
    writes,
    accepted.map((a, k) => ({ ctx: a.req.ctx, eventType: 'fx.order.completed' as const, data: answers[k]! })),
  );
  return answers;
}
