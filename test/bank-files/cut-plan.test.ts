import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/client.js';
import * as repo from '../../src/modules/bank-files/repo.js';
import { planWithoutSeqScans, sentStatements } from '../plans.js';
import { openTestDatabase } from '../harness.js';

/** The bank file cut's claim, as a connection plans it after a few cuts: generic, made on empty tables. */
describe("the bank file cut's claim of unfiled payouts", () => {
  let handle: DatabaseHandle;
  beforeAll(async () => {
    handle = await openTestDatabase();
  });
  afterAll(async () => {
    await handle.close();
  });

  it('walks only the submitted payouts of its environment and currency, oldest first, never every payout ever made', async () => {
    const connection = { environment: 'live', currency: 'NGN', rails: ['bank_transfer'] } as unknown as repo.ConnectionRow;
    const [claim] = await sentStatements(handle.db, (db) => repo.unfiledPayouts(db, connection, ['bank_file'], 500));
    const plan = await planWithoutSeqScans(handle.db, claim!);
    expect(plan).toMatch(/Index Scan using rail_payouts_submitted_idx on rail_payouts/);
    // The order is the index's: no sort of every submitted payout before the limit.
    expect(plan).not.toMatch(/Sort Key/);
    expect(plan).toMatch(/Index (Only )?Scan using bank_file_payouts_pkey/);
  });
});
