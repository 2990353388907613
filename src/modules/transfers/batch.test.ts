import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { AppError } from '../../core/errors.js';
import type { Database } from '../../db/types.js';
import { PostingBatch } from '../../ledger/index.js';
import type { AccountRow } from '../accounts/repo.js';
import { decide } from './batch.js';
import type { Prepared } from './internal.js';
import { SpendingGate } from './limits.js';
import { utcDay } from './spend-repo.js';

// The batch path's decision in memory: no database. The statements of the gate are compiled by a
// Kysely without a connection; the rows a batch would have read are given.
const db = new Kysely<Database>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (k) => new PostgresIntrospector(k),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});
const config = loadConfig({});
const ctx = {
  tenantId: '0190f000-0000-7000-8000-000000000001',
  environment: 'sandbox' as const,
  keyKind: 'secret' as const,
  requestId: 'r',
  settings: {},
};
const CUSTOMER = '0190f000-0000-7000-8000-0000000000c1';
const SOURCE = '0190f000-0000-7000-8000-00000000000a';
const DESTINATION = '0190f000-0000-7000-8000-00000000000b';
const FEES = '0190f000-0000-7000-8000-00000000000f';

/** The working balances of `posted` (minor units) per account, as a batch reads them locked. */
function book(posted: Record<string, bigint>) {
  const rows = Object.entries(posted).map(([account_id, amount]) => ({
    account_id,
    tenant_id: ctx.tenantId,
    environment: ctx.environment,
    currency: 'USD',
    posted: amount,
    pending_debits: 0n,
    pending_credits: 0n,
    allow_negative: false,
    version: 0n,
    tx_now: new Date(),
  }));
  return PostingBatch.open(db, Object.keys(posted), { ids: new Set(Object.keys(posted)), rows });
}

/** A gate for the customer at `level` who already sent `spentToday` (minor units) in USD today. */
function gate(level: 'basic' | undefined, spentToday: bigint) {
  const plan = SpendingGate.plan(db, config, [{ ctx, customerId: CUSTOMER, currency: 'USD' }]);
  const cases = level ? [{ customer_id: CUSTOMER, status: 'approved', level }] : [];
  const spend = [
    {
      tenant_id: ctx.tenantId,
      environment: ctx.environment,
      customer_id: CUSTOMER,
      currency: 'USD',
      day: utcDay(new Date()),
      amount: spentToday,
    },
  ];
  return plan.open([cases, [], [], spend, []]);
}

const noCustomers = () => SpendingGate.plan(db, config, []).open([]);

function transfer(amount: bigint, customerId: string | null = null, fee = 0n): Prepared {
  return {
    req: {
      ctx,
      config,
      body: {
        source: { source_type: 'internal_account', id: SOURCE },
        destination: { destination_type: 'internal_account', id: DESTINATION },
        amount: String(amount),
      },
    },
    id: `t-${amount}`,
    kind: 'internal_transfer',
    source: { id: SOURCE, customer_id: customerId, currency: 'USD' } as AccountRow,
    destination: { id: DESTINATION, customer_id: null },
    currency: 'USD',
    amount,
    fee,
    ...(fee > 0n ? { feeAccount: { id: FEES } } : {}),
  };
}

const codes = (outcomes: ReturnType<typeof decide>) => outcomes.map((o) => (o instanceof AppError ? o.code : 'accepted'));

describe('decide: each movement in arrival order against the locked balances and counters', () => {
  it('lets a later movement use what an earlier refused one did not take', async () => {
    const outcomes = decide(
      [transfer(60_00n), transfer(50_00n), transfer(40_00n)],
      await book({ [SOURCE]: 100_00n, [DESTINATION]: 0n }),
      noCustomers(),
    );
    expect(codes(outcomes)).toEqual(['accepted', 'insufficient_funds', 'accepted']);
  });

  it('makes the source pay amount and fee, and refuses when the fee does not fit', async () => {
    const balances = await book({ [SOURCE]: 100_00n, [DESTINATION]: 0n, [FEES]: 0n });
    const outcomes = decide([transfer(99_00n, null, 2_00n), transfer(97_00n, null, 2_00n)], balances, noCustomers());
    expect(codes(outcomes)).toEqual(['insufficient_funds', 'accepted']);
    const posting = outcomes[1] as { posting: { entries: { accountId: string; amount: bigint }[] } };
    expect(posting.posting.entries.map((e) => [e.accountId, e.amount])).toEqual(
      expect.arrayContaining([
        [SOURCE, -99_00n],
        [DESTINATION, 97_00n],
        [FEES, 2_00n],
      ]),
    );
  });

  it('counts accepted movements toward the daily limit, and refused ones not', async () => {
    // basic: USD 5,000 a day; 4,950 already sent today.
    const balances = await book({ [SOURCE]: 30_00n, [DESTINATION]: 0n });
    const outcomes = decide(
      [transfer(40_00n, CUSTOMER), transfer(30_00n, CUSTOMER), transfer(30_00n, CUSTOMER)],
      balances,
      gate('basic', 4_950_00n),
    );
    expect(codes(outcomes)).toEqual(['insufficient_funds', 'accepted', 'limit_exceeded']);
  });

  it('refuses a customer without approved KYC before the ledger is asked', async () => {
    const outcomes = decide([transfer(1_00n, CUSTOMER)], await book({ [SOURCE]: 100_00n, [DESTINATION]: 0n }), gate(undefined, 0n));
    expect(codes(outcomes)).toEqual(['kyc_level_insufficient']);
  });
});
