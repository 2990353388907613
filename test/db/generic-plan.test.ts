import type { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/client.js';
import { onGenericPlan } from '../../src/db/generic-plan.js';
import { claimBatchKeys } from '../../src/http/idempotency-claim.js';
import { newId } from '../../src/lib/ids.js';
import { readSpendStatement } from '../../src/modules/transfers/spend-repo.js';
import { openTestDatabase } from '../harness.js';
import { explainPrepared } from '../plans.js';

/**
 * The generic plan a connection makes at a named statement's first run on a new database, whose
 * tables are empty, as `onGenericPlan` sends it: the plan the connection keeps until the table is
 * analyzed. It must probe the key's index, as on a large table: a sequential scan there is paid
 * again by every batch as the table grows.
 */
async function firstGenericPlan(handle: DatabaseHandle, statement: CompiledQuery<unknown>): Promise<string> {
  return handle.db.transaction().execute(async (trx) => {
    const [settings] = onGenericPlan(trx, statement);
    await trx.executeQuery(settings);
    return explainPrepared(trx, statement);
  });
}

describe('statements sent on a generic plan, planned on empty tables', () => {
  let handle: DatabaseHandle;
  beforeAll(async () => {
    handle = await openTestDatabase();
  });
  afterAll(async () => {
    await handle.close();
  });

  it("the batch claim of Idempotency-Keys probes the keys' primary key, never scans the table", async () => {
    const claims = [{ tenantId: newId(), environment: 'sandbox', key: newId(), fingerprint: 'f', token: newId() }];
    const plan = await firstGenericPlan(handle, claimBatchKeys(handle.db, claims, newId(), 24));
    expect(plan).not.toMatch(/Seq Scan on idempotency_keys/);
    expect(plan).toMatch(/Anti Join[\s\S]*Index (Only )?Scan using idempotency_keys_pkey/);
  });

  it("today's spending counters probe their primary key, never scan the table", async () => {
    const keys = [
      { scope: { tenantId: newId(), environment: 'sandbox' as const }, customerId: newId(), currency: 'NGN', day: '2026-12-04' },
    ];
    const plan = await firstGenericPlan(handle, readSpendStatement(handle.db, keys));
    expect(plan).not.toMatch(/Seq Scan on customer_daily_spend/);
    expect(plan).toMatch(/Index (Only )?Scan using \w+ on customer_daily_spend/);
  });
});
