import { sql } from 'kysely';
import type { DatabaseHandle } from '../src/db/client.js';

/** Rows a table's statistics say were written so far, and how many indexes it has. */
interface TableWrites {
  inserted: number;
  updated: number;
  hot: number;
  deleted: number;
  indexes: number;
}

export type WriteSnapshot = Map<string, TableWrites>;

/** The database's per-table write counters (pg_stat_user_tables) and each table's index count. */
async function writeSnapshot(handle: DatabaseHandle): Promise<WriteSnapshot> {
  const { rows } = await sql<{ relname: string; ins: string; upd: string; hot: string; del: string; indexes: string }>`
    select t.relname, t.n_tup_ins::text as ins, t.n_tup_upd::text as upd, t.n_tup_hot_upd::text as hot,
      t.n_tup_del::text as del, (select count(*) from pg_index i where i.indrelid = t.relid)::text as indexes
    from pg_stat_user_tables t`.execute(handle.db);
  return new Map(
    rows.map((r) => [
      r.relname,
      { inserted: Number(r.ins), updated: Number(r.upd), hot: Number(r.hot), deleted: Number(r.del), indexes: Number(r.indexes) },
    ]),
  );
}

/**
 * The counters once every backend of the load has published its own: a backend publishes when it
 * goes idle, but at most once a second, and one that published less than a second before waits
 * for its idle timeout, 10 s (PostgreSQL's PGSTAT_IDLE_INTERVAL). So this waits 11 s.
 */
export async function settledWriteSnapshot(handle: DatabaseHandle): Promise<WriteSnapshot> {
  await new Promise((r) => setTimeout(r, 11_000));
  return writeSnapshot(handle);
}

export interface WritesPerTransfer {
  /** Per table: rows inserted, updated (of which HOT) and deleted per transfer, and index entries. */
  tables: { table: string; inserted: number; updated: number; hot: number; deleted: number; indexEntries: number }[];
  rows: number;
  /**
   * Index entries per transfer: every index of a table for each row inserted or updated other
   * than HOT (a partial index its row does not match counts too: an upper bound).
   */
  indexEntries: number;
}

export function writesPerTransfer(before: WriteSnapshot, after: WriteSnapshot, transfers: number): WritesPerTransfer {
  const tables: WritesPerTransfer['tables'] = [];
  for (const [table, b] of after) {
    const a = before.get(table) ?? { inserted: 0, updated: 0, hot: 0, deleted: 0, indexes: b.indexes };
    const inserted = (b.inserted - a.inserted) / transfers;
    const updated = (b.updated - a.updated) / transfers;
    const hot = (b.hot - a.hot) / transfers;
    const deleted = (b.deleted - a.deleted) / transfers;
    if (inserted + updated + deleted === 0) continue;
    tables.push({ table, inserted, updated, hot, deleted, indexEntries: (inserted + updated - hot) * b.indexes });
  }
  tables.sort((x, y) => y.inserted + y.updated - (x.inserted + x.updated));
  const sum = (f: (t: WritesPerTransfer['tables'][number]) => number) => tables.reduce((n, t) => n + f(t), 0);
  return { tables, rows: sum((t) => t.inserted + t.updated + t.deleted), indexEntries: sum((t) => t.indexEntries) };
}

const f2 = (n: number) => (Math.round(n * 100) / 100).toString();

/** "transactions 2 ins (6 index entries), ledger_balances 2 upd (2 HOT), …" */
export function writesText(w: WritesPerTransfer): string {
  return w.tables
    .map((t) => {
      const parts = [
        t.inserted ? `${f2(t.inserted)} ins` : '',
        t.updated ? `${f2(t.updated)} upd (${f2(t.hot)} HOT)` : '',
        t.deleted ? `${f2(t.deleted)} del` : '',
      ].filter(Boolean);
      return `${t.table} ${parts.join(' ')}, ${f2(t.indexEntries)} index entries`;
    })
    .join('; ');
}
