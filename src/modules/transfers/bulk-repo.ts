import type { ColumnType, Insertable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { findScoped } from '../../db/scoped.js';
import type { BulkItemResult } from './schema.js';

export interface TransferBulksTable {
  id: string;
  tenant_id: string;
  environment: string;
  description: string;
  total_items: number;
  succeeded: number;
  failed: number;
  items: ColumnType<BulkItemResult[], string, never>;
  created_at: ColumnType<Date, never, never>;
}

declare module '../../db/types.js' {
  interface Database {
    transfer_bulks: TransferBulksTable;
  }
}

/** Stores a decided bulk with its items' results; returns its creation time. */
export async function insertBulk(db: Queryable, row: Insertable<TransferBulksTable>): Promise<Date> {
  const saved = await db.insertInto('transfer_bulks').values(row).returning('created_at').executeTakeFirstOrThrow();
  return saved.created_at;
}

export async function findBulk(db: Queryable, scope: Scope, id: string) {
  return findScoped(db, 'transfer_bulks', scope, id);
}
