import { randomBytes } from 'node:crypto';
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db, DatabaseHandle } from '../../src/db/client.js';
import { Idempotency } from '../../src/http/idempotency.js';
import { Sealer } from '../../src/lib/crypto.js';
import { newId } from '../../src/lib/ids.js';
import * as ledgerRepo from '../../src/ledger/repo.js';
import * as transactions from '../../src/modules/transactions/repo.js';
import * as opsRepo from '../../src/ops/repo.js';
import * as transfersRepo from '../../src/modules/transfers/repo.js';
import { planWithoutSeqScans, sentStatements } from '../plans.js';
import { openTestDatabase } from '../harness.js';

/**
 * Every index on a table that each transfer inserts into, with what reads it. Each one is paid on
 * every posting (an index insertion and its WAL), so one that nothing reads is dropped
 * (migration 1101) and a new one is added here with its reason, or this test fails.
 */
const WRITE_PATH_INDEXES: Record<string, Record<string, string>> = {
  idempotency_keys: {
    idempotency_keys_pkey: 'the claim and the replay of an Idempotency-Key',
    idempotency_keys_expiry_idx: 'the purge of expired keys (BRIN: no entry while a range is not summarized, migration 1267)',
  },
  ledger_transactions: {
    ledger_transactions_pkey: 'a ledger transaction by id; the reference checks of entries, transactions and transfers (migration 1240)',
  },
  ledger_entries: {
    ledger_entries_pkey: '(transaction_id, id): the entries of a ledger transaction (migration 1261)',
    ledger_entries_account_history_idx: 'balances as of an instant, period totals and statements (migration 1190)',
  },
  transactions: {
    transactions_pkey: '(tenant, environment, id): GET /v1/transactions/{id}, GET /v1/transactions (migration 1260)',
    transactions_account_idx: "an account's transactions (account_id filter, statements)",
    transactions_customer_idx: 'the customer_id filter (partial: customers only)',
    transactions_card_idx: 'the card_id filter (partial: card transactions only)',
    transactions_reference_idx:
      "the reference filter, a statement's lines (a transfer's account transactions share its reference; migration 1268)",
  },
  transfers: {
    transfers_pkey: '(tenant, environment, id): GET /v1/transfers/{id}, GET /v1/transfers (migration 1271)',
    transfers_payout_id_idx: 'a payout by id alone: the payout jobs, the bank file cut, the operator console (partial: payouts only)',
    transfers_status_idx: 'the status filter (partial: transfers not completed, migration 1263)',
    transfers_source_idx: 'the account_id filter (source side)',
    transfers_destination_idx: 'the account_id filter (destination side)',
    transfers_client_reference_idx: "the dashboard's search by client reference (partial: transfers that carry one, migration 1220)",
    transfers_customer_idx: 'the customer_id filter (sender)',
    transfers_destination_customer_idx: 'the customer_id filter (receiver)',
    transfers_pending_payouts_idx: 'the payout worker (partial: pending external payouts only)',
  },
  events: {
    events_pkey: 'an event by id (webhook deliveries, resend)',
    events_tenant_idx: "the dashboard's event list",
    events_group_idx: 'the events of a resource',
    events_type_idx: 'GET /v1/events filtered by type',
  },
  event_fanout_queue: {
    event_fanout_queue_pkey: "the webhook fan-out's claim, oldest first",
  },
  api_request_log: {
    api_request_log_pkey: "(tenant, environment, id): a logged request, the dashboard's request log, retention",
    api_request_log_request_id_idx: 'the request_id filter',
    api_request_log_status_idx: 'the status filter (partial: answers that were not 2xx)',
    api_request_log_path_idx: 'the path prefix filter',
  },
  customer_daily_spend: {
    customer_daily_spend_pkey: "a customer's running total of the day (KYC limits)",
  },
};

let handle: DatabaseHandle;
beforeAll(async () => {
  handle = await openTestDatabase();
});
afterAll(() => handle?.close());

it('the tables every transfer writes carry only the indexes something reads', async () => {
  const { rows } = await sql<{ tablename: string; indexname: string }>`
    select tablename, indexname from pg_indexes
    where schemaname = 'public' and tablename = any(${Object.keys(WRITE_PATH_INDEXES)})
    order by tablename, indexname`.execute(handle.db);
  const actual: Record<string, string[]> = {};
  for (const r of rows) (actual[r.tablename] ??= []).push(r.indexname);
  const expected = Object.fromEntries(Object.entries(WRITE_PATH_INDEXES).map(([table, indexes]) => [table, Object.keys(indexes).sort()]));
  expect(actual).toEqual(expected);
});

it("a batch's Idempotency-Key records, each inserted completed, fill their pages (migration 1250)", async () => {
  // As a batch writes them (http/idempotency-batch.ts): 40 records inserted completed, with a stored
  // answer of a transfer's size (about 670 characters). Migration 1105 kept 80 % of each page free
  // for the completion of a narrow claim: one such record a page.
  const keys = Array.from({ length: 40 }, (_, i) => `filled-${i}-${'k'.repeat(30)}`);
  const { rows } = await sql<{ pages: number }>`
    with w as (
      insert into idempotency_keys (tenant_id, environment, key, fingerprint, state, locked_until, claim_token, owner_id, expires_at,
        response_status, response_body)
      select gen_random_uuid(), 'sandbox', k, repeat('f', 64), 'completed', now() + interval '60 seconds', gen_random_uuid(),
        gen_random_uuid(), now() + interval '24 hours', 200, repeat('r', 670)
      from unnest(${keys}::text[]) as k
      returning ctid)
    select count(distinct (ctid::text::point)[0])::int as pages from w`.execute(handle.db);
  expect(rows[0]!.pages).toBeLessThanOrEqual(6);
});

it('the purge of expired Idempotency-Keys walks a BRIN index, which a new record writes nothing to (migration 1267)', async () => {
  const { rows } = await sql<{ def: string }>`select pg_get_indexdef('idempotency_keys_expiry_idx'::regclass) as def`.execute(handle.db);
  expect(rows[0]!.def).toContain('USING brin (expires_at)');
  const sealer = new Sealer(randomBytes(32).toString('base64'));
  const [sweep] = await sentStatements(handle.db, (db) => new Idempotency(db, sealer, 24).sweep());
  expect(await planWithoutSeqScans(handle.db, sweep!)).toContain('Bitmap Index Scan on idempotency_keys_expiry_idx');
  // A record past its expiry goes, one that is not stays.
  const insert = (key: string, expiry: string) =>
    sql`
    insert into idempotency_keys (tenant_id, environment, key, fingerprint, state, locked_until, claim_token, owner_id, expires_at)
    values (gen_random_uuid(), 'sandbox', ${key}, repeat('f', 64), 'completed', now(), gen_random_uuid(), gen_random_uuid(),
      now() + ${expiry}::interval)`.execute(handle.db);
  await insert('purge-expired', '-1 second');
  await insert('purge-live', '1 hour');
  await new Idempotency(handle.db, sealer, 24).sweep();
  const left = await sql<{ key: string }>`select key from idempotency_keys where key like 'purge-%'`.execute(handle.db);
  expect(left.rows.map((r) => r.key)).toEqual(['purge-live']);
});

/**
 * The reads an index another one covered served walk the one kept: each statement's plan,
 * with sequential scans priced out, names the index; an account transaction's probe starts at its business.
 */
describe('the reads of the indexes merged into a primary key walk it', () => {
  const scope = { tenantId: newId(), environment: 'sandbox' as const };
  const statementsOf = (call: (db: Db) => Promise<unknown>) => sentStatements(handle.db, call);
  const planOf = (query: CompiledQuery) => planWithoutSeqScans(handle.db, query);
  const expectWalks = async (statement: CompiledQuery, index: string) => {
    const plan = await planOf(statement);
    expect(plan, `${statement.sql}\n${plan}`).not.toMatch(/Seq Scan/);
    expect(plan, `${statement.sql}\n${plan}`).toContain(index);
    const conditions = plan.split('\n').filter((line) => line.includes('Index Cond'));
    expect(conditions.length).toBeGreaterThan(0);
    for (const condition of conditions) expect(condition).toContain('tenant_id');
  };

  it('an account transaction by id, and the list newest first, through transactions_pkey (migration 1260)', async () => {
    const [find] = await statementsOf((db) => transactions.findTransaction(db, scope, newId()));
    await expectWalks(find!, 'transactions_pkey');
    const list = await statementsOf((db) => transactions.listTransactions(db, scope, { page: 1, items_per_page: 20 }));
    const page = list.find((q) => /order by/.test(q.sql))!;
    await expectWalks(page, 'Index Scan Backward using transactions_pkey');
  });

  it("a payout batch's pending account transactions, read and completed with each payout's scope, through transactions_pkey", async () => {
    const other = { tenantId: newId(), environment: 'live' as const };
    const [read] = await statementsOf((db) =>
      transactions.pendingAccounts(db, [
        { ...scope, id: newId() },
        { ...other, id: newId() },
      ]),
    );
    await expectWalks(read!, 'transactions_pkey');
    const row = { balance_before: 1n, balance_after: 2n, ledger_transaction_id: newId() };
    const [complete] = await statementsOf((db) =>
      transactions.completePending(db, [
        { ...scope, id: newId(), ...row },
        { ...other, id: newId(), ...row },
      ]),
    );
    await expectWalks(complete!, 'transactions_pkey');
  });

  it('a transfer by id, and the list newest first, through transfers_pkey (migration 1271)', async () => {
    const [find] = await statementsOf((db) => transfersRepo.findTransfer(db, scope, newId()));
    await expectWalks(find!, 'transfers_pkey');
    const list = await statementsOf((db) => transfersRepo.listTransfers(db, scope, { page: 1, items_per_page: 20 }));
    await expectWalks(list.find((q) => /order by/.test(q.sql))!, 'Index Scan Backward using transfers_pkey');
  });

  it('payouts of any business by id alone through transfers_payout_id_idx, which an internal transfer does not write (migration 1271)', async () => {
    const reads = [
      ...(await statementsOf((db) => transfersRepo.lockTransfers(db, [newId(), newId()]))),
      ...(await statementsOf((db) => transfersRepo.findTransfersByIds(db, [newId()]))),
      ...(await statementsOf((db) => opsRepo.findTransferById(db, newId()))),
    ];
    expect(reads).toHaveLength(3);
    for (const read of reads) {
      const plan = await planOf(read);
      expect(plan, plan).not.toMatch(/Seq Scan/);
      expect(plan, plan).toContain('transfers_payout_id_idx');
    }
  });

  it("a ledger transaction's entries through ledger_entries_pkey (migration 1261)", async () => {
    const [entries] = await statementsOf((db) => ledgerRepo.entriesOf(db, [newId(), newId()]));
    const plan = await planOf(entries!);
    expect(plan).not.toMatch(/Seq Scan/);
    expect(plan).toContain('ledger_entries_pkey');
    expect(plan).toMatch(/Index Cond: \(transaction_id = /);
  });

  it("the operator console's ledger entries of a payout: its source account's history and the keys, not the whole ledger", async () => {
    const payout = { id: newId(), source_id: newId(), created_at: new Date(), updated_at: new Date(), ledger_transaction_id: newId() };
    const [entries] = await statementsOf((db) => opsRepo.ledgerEntriesOf(db, scope, payout));
    const plan = await planOf(entries!);
    expect(plan, plan).not.toMatch(/Seq Scan/);
    // Each index is entered at a key: no full scan of an index filtered row by row.
    expect(plan, plan).toMatch(/ledger_entries_account_history_idx[^\n]*\n\s+Index Cond: \(\(account_id = /);
    expect(plan, plan).toMatch(/ledger_entries_pkey[^\n]*\n\s+Index Cond: \(transaction_id = /);
    expect(plan, plan).toMatch(/ledger_transactions_pkey[^\n]*\n\s+Index Cond: \(\(id >= /);
  });
});

describe('the account transactions of a reference, through transactions_reference_idx keyed on the reference alone (migration 1268)', () => {
  it('is the reference alone: an id this system draws, unique across businesses', async () => {
    const { rows } = await sql<{ def: string }>`select pg_get_indexdef('transactions_reference_idx'::regclass) as def`.execute(handle.db);
    expect(rows[0]!.def).toMatch(/\(reference\)$/);
  });
});

describe("the transfers' status index holds only the transfers that are not completed (migration 1263)", () => {
  const scope = { tenantId: newId(), environment: 'sandbox' as const };
  const pageOf = async (status: 'failed' | 'pending' | 'completed') => {
    const statements = await sentStatements(handle.db, (db) =>
      transfersRepo.listTransfers(db, scope, { page: 1, items_per_page: 20, status }),
    );
    return planWithoutSeqScans(handle.db, statements.find((q) => /order by/.test(q.sql))!);
  };

  it('is partial: a completed transfer, nearly every one, writes no entry of it', async () => {
    const { rows } = await sql<{ def: string }>`select pg_get_indexdef('transfers_status_idx'::regclass) as def`.execute(handle.db);
    expect(rows[0]!.def).toContain("WHERE (status <> 'completed'::text)");
  });

  it.each(['failed', 'pending'] as const)('a list of %s transfers walks it (the query states its predicate)', async (status) => {
    expect(await pageOf(status)).toContain('transfers_status_idx');
  });

  it('a list of completed transfers walks the primary key (migration 1271)', async () => {
    const plan = await pageOf('completed');
    expect(plan).not.toMatch(/Seq Scan/);
    expect(plan).toContain('Index Scan Backward using transfers_pkey');
  });
});
