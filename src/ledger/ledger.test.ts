import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../db/client.js';
import { AppError } from '../core/errors.js';
import { pipelined } from '../db/pipeline.js';
import { newId } from '../lib/ids.js';
import { openTestDatabase } from '../../test/harness.js';
import * as ledger from './index.js';

let handle: DatabaseHandle;
const scope = { tenantId: newId(), environment: 'sandbox' as const };

beforeAll(async () => {
  handle = await openTestDatabase();
});
afterAll(async () => handle?.close());

const tx = <T>(fn: (trx: DatabaseHandle['db']) => Promise<T>) => handle.db.transaction().execute((trx) => fn(trx as never));

async function fundedAccount(minor: bigint, currency = 'NGN') {
  return tx(async (trx) => {
    const id = await ledger.openAccount(trx, scope, { currency });
    const settlement = await ledger.systemAccount(trx, scope, 'settlement', currency);
    if (minor > 0n) {
      await ledger.post(trx, scope, {
        kind: 'funding',
        legs: [
          { accountId: settlement, amount: -minor, currency },
          { accountId: id, amount: minor, currency },
        ],
      });
    }
    return id;
  });
}

describe('ledger posting', () => {
  it('posts a balanced transfer with balance_after per entry', async () => {
    const a = await fundedAccount(10_000n);
    const b = await fundedAccount(0n);
    const posted = await tx((trx) =>
      ledger.post(trx, scope, {
        kind: 'transfer',
        reference: 'r1',
        legs: [
          { accountId: a, amount: -2_500n, currency: 'NGN' },
          { accountId: b, amount: 2_500n, currency: 'NGN' },
        ],
      }),
    );
    const byAccount = new Map(posted.entries.map((e) => [e.accountId, e]));
    expect(byAccount.get(a)?.balanceAfter).toBe(7_500n);
    expect(byAccount.get(b)?.balanceAfter).toBe(2_500n);
    const balances = await ledger.getBalances(handle.db, scope, [a, b]);
    expect(balances.get(a)?.posted).toBe(7_500n);
    expect(balances.get(b)?.available).toBe(2_500n);
    const stored = await ledger.getTransaction(handle.db, scope, posted.id);
    expect(stored?.entries).toHaveLength(2);
  });

  it('refuses unbalanced postings and mixed currencies', async () => {
    const a = await fundedAccount(100n);
    const b = await fundedAccount(0n);
    await expect(
      tx((trx) =>
        ledger.post(trx, scope, {
          kind: 'x',
          legs: [
            { accountId: a, amount: -10n, currency: 'NGN' },
            { accountId: b, amount: 9n, currency: 'NGN' },
          ],
        }),
      ),
    ).rejects.toBeInstanceOf(ledger.LedgerInvariantError);
    const usd = await fundedAccount(0n, 'USD');
    await expect(
      tx((trx) =>
        ledger.post(trx, scope, {
          kind: 'x',
          legs: [
            { accountId: a, amount: -10n, currency: 'NGN' },
            { accountId: usd, amount: 10n, currency: 'NGN' },
          ],
        }),
      ),
    ).rejects.toBeInstanceOf(ledger.LedgerInvariantError);
    expect((await ledger.getBalance(handle.db, scope, a))?.posted).toBe(100n);
  });

  it('refuses an overdraft with insufficient_funds and moves nothing', async () => {
    const a = await fundedAccount(100n);
    const b = await fundedAccount(0n);
    const err = await tx((trx) =>
      ledger.post(trx, scope, {
        kind: 't',
        legs: [
          { accountId: b, amount: 101n, currency: 'NGN' },
          { accountId: a, amount: -101n, currency: 'NGN' },
        ],
      }),
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('insufficient_funds');
    const balances = await ledger.getBalances(handle.db, scope, [a, b]);
    expect(balances.get(a)?.posted).toBe(100n);
    expect(balances.get(b)?.posted).toBe(0n);
  });

  it('holds, posts partially at most once, and voids', async () => {
    const a = await fundedAccount(1_000n);
    const sink = await tx((trx) => ledger.systemAccount(trx, scope, 'card_settlement', 'NGN'));
    const h = await tx((trx) =>
      ledger.hold(trx, scope, { debitAccountId: a, creditAccountId: sink, amount: 600n, currency: 'NGN', kind: 'card' }),
    );
    let bal = await ledger.getBalance(handle.db, scope, a);
    expect(bal).toMatchObject({ posted: 1_000n, pendingDebits: 600n, available: 400n });
    // A second hold beyond available fails.
    const over = await tx((trx) =>
      ledger.hold(trx, scope, { debitAccountId: a, creditAccountId: sink, amount: 401n, currency: 'NGN', kind: 'card' }),
    ).catch((e: unknown) => e);
    expect((over as AppError).code).toBe('insufficient_funds');
    const { hold, transaction } = await tx((trx) => ledger.postHold(trx, scope, h.id, 250n));
    expect(hold).toMatchObject({ status: 'posted', postedAmount: 250n });
    expect(transaction.entries.find((e) => e.accountId === a)?.balanceAfter).toBe(750n);
    bal = await ledger.getBalance(handle.db, scope, a);
    expect(bal).toMatchObject({ posted: 750n, pendingDebits: 0n, available: 750n });
    const again = await tx((trx) => ledger.voidHold(trx, scope, h.id)).catch((e: unknown) => e);
    expect((again as AppError).code).toBe('invalid_state_transition');
    const h2 = await tx((trx) =>
      ledger.hold(trx, scope, { debitAccountId: a, creditAccountId: sink, amount: 750n, currency: 'NGN', kind: 'card' }),
    );
    expect((await tx((trx) => ledger.voidHold(trx, scope, h2.id))).status).toBe('voided');
    expect((await ledger.getBalance(handle.db, scope, a))?.available).toBe(750n);
    const twice = await tx((trx) => ledger.postHold(trx, scope, h2.id)).catch((e: unknown) => e);
    expect((twice as AppError).code).toBe('invalid_state_transition');
  });

  it('refuses a hold beyond available as a typed result naming the account, writing nothing', async () => {
    const a = await fundedAccount(500n);
    const sink = await fundedAccount(0n);
    // The refusal is a value: the transaction goes on (and commits) with nothing of the hold in it.
    const result = await tx((trx) =>
      ledger.tryHold(trx, scope, { debitAccountId: a, creditAccountId: sink, amount: 501n, currency: 'NGN', kind: 'card' }),
    );
    expect(result).toEqual({ ok: false, reason: 'insufficient_funds', accountId: a });
    expect(await ledger.getBalance(handle.db, scope, a)).toMatchObject({ posted: 500n, pendingDebits: 0n, available: 500n });
    expect((await ledger.getBalance(handle.db, scope, sink))?.pendingCredits ?? 0n).toBe(0n);
    const ok = await tx((trx) =>
      ledger.tryHold(trx, scope, { debitAccountId: a, creditAccountId: sink, amount: 500n, currency: 'NGN', kind: 'card' }),
    );
    expect(ok.ok).toBe(true);
    expect((await ledger.getBalance(handle.db, scope, a))?.available).toBe(0n);
  });

  it('a batch decides holds and postings together in memory: holds all or none, pending counts against available', async () => {
    const a = await fundedAccount(1_000n);
    const b = await fundedAccount(0n);
    const sink = await tx((trx) => ledger.systemAccount(trx, scope, 'settlement', 'NGN'));
    const fee = await fundedAccount(0n);
    const holds = await tx(async (trx) => {
      const book = await ledger.PostingBatch.open(trx, [a, b, sink, fee]);
      const hold = (amount: bigint, creditAccountId: string) => ({
        debitAccountId: a,
        creditAccountId,
        amount,
        currency: 'NGN',
        kind: 'payout',
      });
      const first = book.tryHolds(scope, [hold(600n, sink), hold(100n, fee)]);
      expect(first.ok).toBe(true);
      // 300 left: the principal alone would fit, with its fee it does not; neither is taken.
      expect(book.tryHolds(scope, [hold(250n, sink), hold(100n, fee)])).toEqual({ ok: false, reason: 'insufficient_funds', accountId: a });
      expect(book.available(a)).toBe(300n);
      // A posting of the same batch sees the held amount as unavailable.
      const post = (amount: bigint) =>
        book.tryPost(scope, {
          kind: 't',
          legs: [
            { accountId: a, amount: -amount, currency: 'NGN' },
            { accountId: b, amount, currency: 'NGN' },
          ],
        });
      expect(post(301n).ok).toBe(false);
      expect(post(300n).ok).toBe(true);
      await book.flush(trx);
      return first.ok ? first.holds : [];
    });
    expect(await ledger.getBalance(handle.db, scope, a)).toMatchObject({ posted: 700n, pendingDebits: 700n, available: 0n });
    expect((await ledger.getBalance(handle.db, scope, fee))?.pendingCredits).toBe(100n);
    expect((await ledger.getHold(handle.db, scope, holds[0]!.id))?.status).toBe('pending');
    // Held in a batch, finished like any hold.
    await tx((trx) => ledger.postHold(trx, scope, holds[0]!.id));
    await tx((trx) => ledger.voidHold(trx, scope, holds[1]!.id));
    expect(await ledger.getBalance(handle.db, scope, a)).toMatchObject({ posted: 100n, pendingDebits: 0n, available: 100n });
  });

  it('a batch opens on balance rows locked ahead, and refuses one that was not instead of locking it out of order', async () => {
    const a = await fundedAccount(1_000n);
    const b = await fundedAccount(0n);
    const other = await fundedAccount(0n);
    const foreign = { tenantId: newId(), environment: 'sandbox' as const };
    await tx(async (trx) => {
      // Another business's account named among them is not locked: the rows are of `scope` only.
      const ahead = ledger.balanceLockAhead(trx, scope, [b, a, a]);
      const [locks, rows] = await pipelined(trx, ...ahead.statements);
      expect(locks).toHaveLength(2);
      expect(rows.map((r) => r.account_id)).toEqual([a, b].sort());
      expect(await pipelined(trx, ...ledger.balanceLockAhead(trx, foreign, [a]).statements)).toEqual([[], []]);
      await expect(ledger.PostingBatch.open(trx, [a, other], { ids: ahead.ids, rows })).rejects.toThrow(ledger.LedgerInvariantError);
      const book = await ledger.PostingBatch.open(trx, [a, b], { ids: ahead.ids, rows });
      expect(book.available(a)).toBe(1_000n);
      const posted = book.tryPost(scope, {
        kind: 't',
        legs: [
          { accountId: a, amount: -400n, currency: 'NGN' },
          { accountId: b, amount: 400n, currency: 'NGN' },
        ],
      });
      expect(posted.ok).toBe(true);
      await book.flush(trx);
    });
    expect((await ledger.getBalance(handle.db, scope, b))?.posted).toBe(400n);
  });

  it('a batch voids locked holds, alone or with a posting they paid for: both or neither, once', async () => {
    const a = await fundedAccount(1_000n);
    const b = await fundedAccount(0n);
    const sink = await tx((trx) => ledger.systemAccount(trx, scope, 'fx_position', 'NGN'));
    const hold = (amount: bigint) =>
      tx((trx) => ledger.hold(trx, scope, { debitAccountId: a, creditAccountId: sink, amount, currency: 'NGN', kind: 'fx_limit' }));
    const [h1, h2, h3] = [await hold(600n), await hold(300n), await hold(50n)];
    expect((await ledger.getBalance(handle.db, scope, a))?.available).toBe(50n);
    const pay = (amount: bigint) => ({
      kind: 'fx',
      legs: [
        { accountId: a, amount: -amount, currency: 'NGN' },
        { accountId: b, amount, currency: 'NGN' },
      ],
    });
    await tx(async (trx) => {
      const holds = await ledger.lockPendingHolds(trx, scope, [h2.id, h1.id, h3.id, newId()]);
      expect([...holds.keys()]).toEqual([h1.id, h2.id, h3.id].sort());
      // Another business's holds are not locked.
      expect((await ledger.lockPendingHolds(trx, { ...scope, tenantId: newId() }, [h1.id])).size).toBe(0);
      const book = await ledger.PostingBatch.open(trx, [a, b, sink]);
      // 700 is more than the 600 the hold frees with the 50 unheld: refused, and the hold stays.
      expect(book.tryPost(scope, pay(700n), [holds.get(h1.id)!])).toEqual({ ok: false, reason: 'insufficient_funds', accountId: a });
      expect(book.available(a)).toBe(50n);
      expect(book.tryPost(scope, pay(650n), [holds.get(h1.id)!]).ok).toBe(true);
      expect(book.available(a)).toBe(0n);
      book.releaseHolds(scope, [holds.get(h2.id)!]);
      expect(book.available(a)).toBe(300n);
      expect(() => book.releaseHolds(scope, [holds.get(h2.id)!])).toThrow(ledger.LedgerInvariantError);
      expect(() => book.releaseHolds(scope, [holds.get(h3.id)!, holds.get(h3.id)!])).toThrow(ledger.LedgerInvariantError);
      await book.flush(trx);
    });
    expect(await ledger.getBalance(handle.db, scope, a)).toMatchObject({ posted: 350n, pendingDebits: 50n, available: 300n });
    expect((await ledger.getBalance(handle.db, scope, sink))?.pendingCredits).toBe(50n);
    expect((await ledger.getHold(handle.db, scope, h1.id))?.status).toBe('voided');
    expect((await ledger.getHold(handle.db, scope, h2.id))?.status).toBe('voided');
    expect((await ledger.getHold(handle.db, scope, h3.id))?.status).toBe('pending');
    // Finished holds are not pending any more: a later batch does not see them.
    expect((await tx((trx) => ledger.lockPendingHolds(trx, scope, [h1.id, h2.id]))).size).toBe(0);
    await tx((trx) => ledger.voidHold(trx, scope, h3.id));
  });

  it('a batch posts locked holds in full, as postHold posts one, each once', async () => {
    const a = await fundedAccount(1_000n);
    const sink = await tx((trx) => ledger.systemAccount(trx, scope, 'settlement', 'NGN'));
    const hold = (amount: bigint, kind: string) =>
      tx((trx) =>
        ledger.hold(trx, scope, {
          debitAccountId: a,
          creditAccountId: sink,
          amount,
          currency: 'NGN',
          kind,
          reference: 'r',
          metadata: { n: 1 },
        }),
      );
    const [h1, h2, h3] = [await hold(600n, 'payout'), await hold(100n, 'payout_fee'), await hold(50n, 'payout')];
    const sinkBefore = (await ledger.getBalance(handle.db, scope, sink))!;
    const postings = await tx(async (trx) => {
      const holds = await ledger.lockPendingHolds(trx, scope, [h1.id, h2.id]);
      const book = await ledger.PostingBatch.open(trx, [a, sink]);
      const posted = book.postHolds(scope, [holds.get(h1.id)!, holds.get(h2.id)!]);
      // What they reserved is spent, not available again: the 50 still held stays held.
      expect(book.available(a)).toBe(250n);
      expect(() => book.postHolds(scope, [holds.get(h1.id)!])).toThrow(ledger.LedgerInvariantError);
      expect(() => book.releaseHolds(scope, [holds.get(h2.id)!])).toThrow(ledger.LedgerInvariantError);
      await book.flush(trx);
      return posted;
    });
    // Entries in lock order with their balances after, chained through the batch.
    expect(postings.map((p) => [p.kind, p.entries.find((e) => e.accountId === a)?.balanceAfter])).toEqual([
      ['payout', 400n],
      ['payout_fee', 300n],
    ]);
    expect(await ledger.getBalance(handle.db, scope, a)).toMatchObject({ posted: 300n, pendingDebits: 50n, available: 250n });
    expect(await ledger.getBalance(handle.db, scope, sink)).toMatchObject({
      posted: sinkBefore.posted + 700n,
      pendingCredits: sinkBefore.pendingCredits - 700n,
    });
    expect(await ledger.getHold(handle.db, scope, h1.id)).toMatchObject({
      status: 'posted',
      postedAmount: 600n,
      transactionId: postings[0]!.id,
    });
    const stored = await ledger.getTransaction(handle.db, scope, postings[1]!.id);
    expect(stored).toMatchObject({ kind: 'payout_fee', reference: 'r', metadata: { n: 1, hold_id: h2.id } });
    await tx((trx) => ledger.voidHold(trx, scope, h3.id));
    expect((await ledger.reconcile(handle.db, scope.tenantId)).ok).toBe(true);
  });

  it.runIf(process.env.DATABASE_URL)(
    'a batch write of a repeated shape runs on a cached generic plan, not planned anew on every call',
    async () => {
      const a = await fundedAccount(1_000n);
      const b = await fundedAccount(0n);
      // A ledger of some size, as PostgreSQL's statistics see it: on a handful of rows any plan is cheap.
      const other = newId();
      await sql`insert into ledger_accounts (id, tenant_id, environment, currency, kind)
        select gen_random_uuid(), ${other}::uuid, 'sandbox', 'NGN', 'account' from generate_series(1, 20000)`.execute(handle.db);
      await sql`insert into ledger_balances (account_id, tenant_id, environment, currency, allow_negative)
        select id, tenant_id, environment, currency, false from ledger_accounts where tenant_id = ${other}::uuid`.execute(handle.db);
      await sql`analyze ledger_balances`.execute(handle.db);
      const plans = await handle.db.connection().execute(async (conn) => {
        // One connection: its prepared statements are its own (earlier tests may have used it too).
        const counts = async () => {
          const { rows } = await sql<{ name: string; generic_plans: string; custom_plans: string }>`
          select name, generic_plans::text, custom_plans::text from pg_prepared_statements
          where statement like '%update ledger_balances b set posted%'`.execute(conn);
          return new Map(rows.map((r) => [r.name, { generic: Number(r.generic_plans), custom: Number(r.custom_plans) }]));
        };
        const before = await counts();
        for (let i = 0; i < 10; i++) {
          await conn.transaction().execute(async (trx) => {
            const book = await ledger.PostingBatch.open(trx, [a, b]);
            const legs = [
              { accountId: a, amount: -1n, currency: 'NGN' },
              { accountId: b, amount: 1n, currency: 'NGN' },
            ];
            expect(book.tryPost(scope, { kind: 't', legs }).ok).toBe(true);
            await book.flush(trx);
          });
        }
        const after = await counts();
        return [...after].map(([name, n]) => ({
          generic: n.generic - (before.get(name)?.generic ?? 0),
          custom: n.custom - (before.get(name)?.custom ?? 0),
        }));
      });
      // Ten calls of one statement text: prepared by the second at the latest (db/client.ts), planned
      // for each of its first five runs (PostgreSQL's rule), then run on the generic plan. With
      // unnest(array parameters) the generic plan was never chosen: 9 custom plans, 0 generic.
      const ours = plans.filter((p) => p.generic + p.custom > 0);
      expect(ours).toHaveLength(1);
      expect(ours[0]!.generic).toBeGreaterThan(0);
      expect(ours[0]!.custom).toBeLessThanOrEqual(5);
    },
  );

  it('reconciles', async () => {
    const report = await ledger.reconcile(handle.db, scope.tenantId);
    expect(report.ok).toBe(true);
    expect(report.transactions_checked).toBeGreaterThan(3);
  });
});
