import { sql, type RawBuilder } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ledger/index.js';
import { newId } from '../../src/lib/ids.js';
import { walRecordsOf } from '../wal-records.js';
import { sandboxBusiness, startTestApp, type TestApp } from '../harness.js';

/**
 * Writes a transfer no longer makes because another row already says the same (issue 49): each
 * test fails on the code before its change.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

async function fundedPair(name: string) {
  const { api, ctx } = await sandboxBusiness(t, name);
  const open = async () => (await api.post('/v1/accounts', { currency: 'NGN', label: 'w' })).body.data.id as string;
  const [from, to] = [await open(), await open()];
  expect((await api.post(`/v1/simulations/accounts/${from}/fund`, { amount: '50.00' })).status).toBe(200);
  const transfer = async () => {
    const res = await api.post('/v1/transfers', {
      source: { id: from },
      destination: { destination_type: 'internal_account', id: to },
      amount: '1.00',
    });
    expect(res.status).toBe(200);
    return res.body.data.id as string;
  };
  return { api, ctx, from, to, transfer };
}

/** The ledger transaction a transfer posted. */
async function ledgerTransactionOf(transferId: string) {
  const row = await t.db.selectFrom('transfers').select('ledger_transaction_id').where('id', '=', transferId).executeTakeFirstOrThrow();
  return row.ledger_transaction_id!;
}

/** xmax of each row: a row lock (a foreign key's FOR KEY SHARE included) sets it to the locker's transaction. */
async function xmaxOf(table: 'ledger_accounts' | 'ledger_transactions', ids: string[]) {
  const { rows } = await sql<{ id: string; xmax: string }>`
    select id, xmax::text as xmax from ${sql.table(table)} where id = any(${ids}::uuid[]) order by id`.execute(t.db);
  return rows;
}

describe('a transfer writes nothing another row already says', () => {
  it("its ledger transaction's metadata does not repeat the transfer id its reference holds", async () => {
    const { transfer } = await fundedPair('Metadata Ltd');
    const id = await transfer();
    const row = await t.db
      .selectFrom('ledger_transactions')
      .select(['reference', 'metadata'])
      .where('reference', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ reference: id, metadata: {} });
  });

  it('its row holds no reference beside its id, which is the reference the API answers (migration 1270)', async () => {
    const { api, transfer } = await fundedPair('Reference Ltd');
    const id = await transfer();
    const row = await t.db.selectFrom('transfers').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(Object.values(row).filter((v) => v === id)).toEqual([id]);
    expect((await api.get(`/v1/transfers/${id}`)).body.data.reference).toBe(id);
  });

  it('its balance updates change the balances alone: no counter bumped at the row end (migration 1272)', async () => {
    const { from, to, transfer } = await fundedPair('Counter Ltd');
    await transfer();
    await transfer();
    const { rows } = await sql<{ retired_version: string }>`
      select retired_version::text from ledger_balances where account_id = any(${[from, to]}::uuid[])`.execute(t.db);
    expect(rows).toEqual([{ retired_version: '0' }, { retired_version: '0' }]);
  });

  it('locks neither its ledger transaction nor the ledger accounts it posts to (no foreign-key row locks, migration 1240)', async () => {
    const { from, to, transfer } = await fundedPair('Locks Ltd');
    const accountsBefore = await xmaxOf('ledger_accounts', [from, to]);
    const id = await transfer();
    const tx = await t.db.selectFrom('transfers').select('ledger_transaction_id').where('id', '=', id).executeTakeFirstOrThrow();
    expect(await xmaxOf('ledger_transactions', [tx.ledger_transaction_id!])).toEqual([{ id: tx.ledger_transaction_id, xmax: '0' }]);
    expect(await xmaxOf('ledger_accounts', [from, to])).toEqual(accountsBefore);
  });

  it.skipIf(process.env.DATABASE_URL === undefined)(
    "its WAL holds no row lock of its ledger transaction or ledger accounts, and no confirm of its key's claim",
    async () => {
      const { transfer } = await fundedPair('WAL Ltd');
      const records = await walRecordsOf(t.db, transfer);
      expect(records).toContain('INSERT ledger_transactions');
      expect(records.filter((r) => /^LOCK ledger_(transactions|accounts)$|^HEAP_CONFIRM /.test(r))).toEqual([]);
    },
  );

  it.skipIf(process.env.DATABASE_URL === undefined)(
    'its Idempotency-Key record is one heap insert, completed: no claim updated after it, no claim deleted',
    async () => {
      const { transfer } = await fundedPair('Key Once Ltd');
      const records = (await walRecordsOf(t.db, transfer)).filter((r) => r.endsWith(' idempotency_keys'));
      expect(records.filter((r) => /^INSERT(\+INIT)? /.test(r))).toHaveLength(1);
      expect(records.filter((r) => /^(HOT_UPDATE|UPDATE|DELETE|LOCK) /.test(r))).toEqual([]);
    },
  );

  it('what the foreign keys still guarded holds: ledger accounts and transactions are never deleted, renumbered or truncated', async () => {
    const { from, transfer } = await fundedPair('Kept Ltd');
    const id = await transfer();
    const refused = /never deleted nor given another id/;
    await expect(sql`delete from ledger_transactions where reference = ${id}`.execute(t.db)).rejects.toThrow(refused);
    await expect(sql`update ledger_transactions set id = gen_random_uuid() where reference = ${id}`.execute(t.db)).rejects.toThrow(refused);
    await expect(sql`delete from ledger_accounts where id = ${from}`.execute(t.db)).rejects.toThrow(refused);
    await expect(sql`update ledger_accounts set id = gen_random_uuid() where id = ${from}`.execute(t.db)).rejects.toThrow(refused);
    await expect(sql`truncate ledger_transactions cascade`.execute(t.db)).rejects.toThrow(refused);
    await expect(sql`truncate ledger_accounts cascade`.execute(t.db)).rejects.toThrow(refused);
  });

  it('a row that names a missing ledger transaction or ledger account is still refused, as by the foreign keys before', async () => {
    const { ctx, from, transfer } = await fundedPair('Dangling Ltd');
    const id = await transfer();
    const tx = await ledgerTransactionOf(id);
    const missing = /no ledger (transaction|account)/;
    const entry = (transactionId: string, accountId: string) => sql`
      insert into ledger_entries (id, tenant_id, environment, transaction_id, account_id, currency, amount, balance_after)
      values (gen_random_uuid(), ${ctx.tenantId}, 'sandbox', ${transactionId}, ${accountId}, 'NGN', 1, 1)`;
    await expect(entry(newId(), from).execute(t.db)).rejects.toThrow(missing);
    await expect(entry(tx, newId()).execute(t.db)).rejects.toThrow(missing);
    await expect(sql`update transactions set account_id = ${newId()} where reference = ${id}`.execute(t.db)).rejects.toThrow(missing);
    await expect(sql`update transactions set ledger_transaction_id = ${newId()} where reference = ${id}`.execute(t.db)).rejects.toThrow(
      missing,
    );
    await expect(sql`update transfers set ledger_transaction_id = ${newId()} where id = ${id}`.execute(t.db)).rejects.toThrow(missing);
    expect((await ledger.reconcile(t.db, ctx.tenantId)).ok).toBe(true);
  });

  it('refuses a statement inserting several rows, one of them pointing at nothing, and names what it points at', async () => {
    const { transfer } = await fundedPair('Statement Checks Ltd');
    const id = await transfer();
    const tx = await ledgerTransactionOf(id);
    // The transfer's rows copied under new ids in one statement, the first copy pointing at nothing:
    // every table and reference the foreign keys guarded before migration 1240, on insert.
    const copies = (
      table: 'ledger_entries' | 'transactions' | 'transfers',
      where: RawBuilder<unknown>,
      change: Record<string, string>,
    ) => sql`
      insert into ${sql.table(table)}
      select (jsonb_populate_record(null::${sql.table(table)},
        to_jsonb(x) || jsonb_build_object('id', gen_random_uuid()) || case when x.n = 1 then ${JSON.stringify(change)}::jsonb else '{}' end)).*
      from (select r.*, row_number() over (order by r.id) as n from ${sql.table(table)} r where ${where}) x`;
    const [lost, gone] = [newId(), newId()];
    const cases = [
      ['ledger_entries', sql`r.transaction_id = ${tx}`, { account_id: lost }, `ledger_entries: no ledger account ${lost}`],
      ['ledger_entries', sql`r.transaction_id = ${tx}`, { transaction_id: gone }, `ledger_entries: no ledger transaction ${gone}`],
      ['transactions', sql`r.reference = ${id}`, { account_id: lost }, `transactions: no ledger account ${lost}`],
      ['transactions', sql`r.reference = ${id}`, { ledger_transaction_id: gone }, `transactions: no ledger transaction ${gone}`],
      ['transfers', sql`r.id = ${id}`, { ledger_transaction_id: gone }, `transfers: no ledger transaction ${gone}`],
    ] as const;
    for (const [table, where, change, refused] of cases) await expect(copies(table, where, change).execute(t.db)).rejects.toThrow(refused);
  });
});
