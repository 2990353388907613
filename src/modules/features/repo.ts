import type { ColumnType, Insertable, Selectable } from 'kysely';
import type { Queryable } from '../../db/client.js';
import type { Scope } from '../../core/context.js';
import { scoped } from '../../db/scoped.js';

export interface CustomerFeaturesTable {
  id: string;
  tenant_id: string;
  environment: string;
  customer_id: string;
  feature_id: string;
  status: 'active' | 'inactive';
  provider_data: ColumnType<Record<string, unknown>, string, string>;
  activated_at: Date | null;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
}

declare module '../../db/types.js' {
  interface Database {
    customer_features: CustomerFeaturesTable;
  }
}

export type FeatureRow = Selectable<CustomerFeaturesTable>;

export async function featuresOf(db: Queryable, ctx: Scope, customerId: string): Promise<FeatureRow[]> {
  return scoped(db, 'customer_features', ctx).selectAll().where('customer_id', '=', customerId).execute();
}

export async function findFeature(db: Queryable, ctx: Scope, customerId: string, featureId: string) {
  return scoped(db, 'customer_features', ctx)
    .selectAll()
    .where('customer_id', '=', customerId)
    .where('feature_id', '=', featureId)
    .executeTakeFirst();
}

/** Activates (inserts, or re-activates an inactive row). Returns false when it was already active. */
export async function activate(db: Queryable, row: Insertable<CustomerFeaturesTable>): Promise<boolean> {
  const result = await db
    .insertInto('customer_features')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'environment', 'customer_id', 'feature_id'])
        .doUpdateSet({ status: 'active', provider_data: row.provider_data, activated_at: row.activated_at, updated_at: new Date() })
        .where('customer_features.status', '<>', 'active'),
    )
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}
