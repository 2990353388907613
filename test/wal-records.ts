import { sql } from 'kysely';
import type { Db } from '../src/db/client.js';

/**
 * The WAL records `work` wrote to this database's tables and indexes, as "<kind> <relation>"
 * (e.g. "HEAP_CONFIRM idempotency_keys", "LOCK ledger_accounts"), read with pg_walinspect:
 * PostgreSQL only (PGlite cannot read its WAL). Other databases' records in the same range
 * (other test files on the server) are left out by the database oid of each block reference.
 */
export async function walRecordsOf(db: Db, work: () => Promise<unknown>): Promise<string[]> {
  await sql`create extension if not exists pg_walinspect`.execute(db);
  const lsn = async () => (await sql<{ lsn: string }>`select pg_current_wal_insert_lsn()::text as lsn`.execute(db)).rows[0]!.lsn;
  const start = await lsn();
  await work();
  // Committed, so flushed: every record of the work is readable up to the flush position.
  const end = (await sql<{ lsn: string }>`select pg_current_wal_flush_lsn()::text as lsn`.execute(db)).rows[0]!.lsn;
  const { rows } = await sql<{ kind: string; relname: string }>`
    select w.record_type as kind, c.relname
    from pg_get_wal_records_info(${start}::pg_lsn, ${end}::pg_lsn) w,
      regexp_match(w.block_ref, 'rel \\d+/(\\d+)/(\\d+)') m
      join pg_class c on pg_relation_filenode(c.oid)::text = m[2]
    where m[1] = (select oid::text from pg_database where datname = current_database())`.execute(db);
  return rows.map((r) => `${r.kind} ${r.relname}`);
}
