import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { RequestContext } from '../../http/context.js';
import { paginate, type Page } from '../../http/pagination.js';
import type { ListTransfersQuery, TransferStatus } from './schema.js';

export interface TransfersTable {
  id: string;
  tenant_id: string;
  environment: string;
  reference: string;
  client_reference: string | null;
  description: ColumnType<string, string | undefined, string>;
  customer_id: string | null;
  destination_customer_id: string | null;
  source_type: string;
  source_id: string;
  destination_type: string;
  destination_id: string | null;
  rail: string | null;
  currency: string;
  amount: bigint;
  fee: ColumnType<bigint, bigint | undefined, bigint>;
  local_amount: bigint | null;
  local_currency: string | null;
  rate: string | null;
  status: TransferStatus;
  failure_reason: string | null;
  ledger_transaction_id: string | null;
  transaction_id: string | null;
  hold_id: string | null;
  metadata: ColumnType<Record<string, unknown>, string | undefined, string>;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    transfers: TransfersTable;
  }
}

export type TransferRow = Selectable<TransfersTable>;
type Scope = Pick<RequestContext, 'tenantId' | 'environment'>;

export async function insertTransfer(db: Queryable, row: Insertable<TransfersTable>) {
  await db.insertInto('transfers').values(row).execute();
}

export async function findTransfer(db: Queryable, ctx: Scope, id: string) {
  return db
    .selectFrom('transfers')
    .selectAll()
    .where('tenant_id', '=', ctx.tenantId)
    .where('environment', '=', ctx.environment)
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function listTransfers(db: Queryable, ctx: Scope, query: ListTransfersQuery): Promise<Page<TransferRow>> {
  let base = db.selectFrom('transfers').where('tenant_id', '=', ctx.tenantId).where('environment', '=', ctx.environment);
  if (query.status) base = base.where('status', '=', query.status);
  if (query.account_id) {
    const id = query.account_id;
    base = base.where((eb) => eb.or([eb('source_id', '=', id), eb('destination_id', '=', id)]));
  }
  if (query.customer_id) {
    const id = query.customer_id;
    base = base.where((eb) => eb.or([eb('customer_id', '=', id), eb('destination_customer_id', '=', id)]));
  }
  return paginate<TransferRow>(db, base, 'transfers.id', query, (qb) => qb.selectAll());
}
