import { sql, type SelectQueryBuilder } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/client.js';
import { scoped } from '../../src/db/scoped.js';
import { newId } from '../../src/lib/ids.js';
import { accountOwner, cardOwner, transactionNames, transferNames } from '../../src/dashboard/names-repo.js';
import { byIdQuery, byTextQueries } from '../../src/dashboard/search-repo.js';
import { openTestDatabase } from '../harness.js';

/**
 * The search's reads and the names' joins use indexes only: planned with sequential scans
 * disabled, no plan falls back to one (a read no index serves shows a Seq Scan all the same), and
 * each exact text match has an index led by the scope and its column.
 */
let handle: DatabaseHandle;
beforeAll(async () => {
  handle = await openTestDatabase();
});
afterAll(() => handle?.close());

const scope = { tenantId: newId(), environment: 'sandbox' as const };

async function planOf(build: (db: DatabaseHandle['db']) => SelectQueryBuilder<any, any, any>): Promise<string> {
  return handle.db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    const rows = await build(trx as never).explain();
    return rows.map((r) => Object.values(r)[0]).join('\n');
  });
}

it('finds by id with one index lookup per table, in one statement', async () => {
  const plan = await planOf((db) => byIdQuery(db, scope, newId()));
  expect(plan).not.toMatch(/Seq Scan/);
});

it('finds by email, external id, client reference, reference and request id through indexes', async () => {
  for (const text of ['ada@example.com', 'invoice-42']) {
    for (const [i, q] of byTextQueries(handle.db, scope, text).entries()) {
      const plan = await planOf((db) => byTextQueries(db, scope, text)[i]!);
      expect(plan, `${text} #${i}: ${q.compile().sql}\n${plan}`).not.toMatch(/Seq Scan/);
    }
  }
});

it('has an index for each exact text match, after the scope where the text is not unique across businesses', async () => {
  const { rows } = await sql<{ indexname: string; indexdef: string }>`
    select indexname, indexdef from pg_indexes where schemaname = 'public'`.execute(handle.db);
  const def = (name: string) => rows.find((r) => r.indexname === name)?.indexdef ?? '';
  expect(def('customers_email_idx')).toMatch(/\(tenant_id, environment, type, lower\(email\)\)/);
  expect(def('customers_external_id_idx')).toMatch(/\(tenant_id, environment, external_id\)/);
  expect(def('transfers_client_reference_idx')).toMatch(/\(tenant_id, environment, client_reference\)/);
  // A transaction's reference is an id this system draws, unique across businesses: the reference alone (migration 1268).
  expect(def('transactions_reference_idx')).toMatch(/\(reference\)$/);
  expect(def('api_request_log_request_id_idx')).toMatch(/\(tenant_id, environment, request_id\)/);
});

it("joins the names of a page's rows by primary key", async () => {
  const pages = [
    (db: DatabaseHandle['db']) => transferNames.join(scoped(db, 'transfers', scope).selectAll('transfers')),
    (db: DatabaseHandle['db']) => transactionNames.join(scoped(db, 'transactions', scope).selectAll('transactions')),
    (db: DatabaseHandle['db']) => accountOwner.join(scoped(db, 'accounts', scope).selectAll('accounts')),
    (db: DatabaseHandle['db']) => cardOwner.join(scoped(db, 'cards', scope).selectAll('cards')),
  ];
  for (const page of pages) {
    const plan = await planOf((db) =>
      page(db)
        .orderBy('id' as never, 'desc')
        .limit(21),
    );
    expect(plan).not.toMatch(/Seq Scan/);
  }
});
