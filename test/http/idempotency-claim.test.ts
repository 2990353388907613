import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimKeys, isClaimRace, type KeyClaim } from '../../src/http/idempotency-claim.js';
import { newId } from '../../src/lib/ids.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';
import { walRecordsOf } from '../wal-records.js';

/**
 * The Idempotency-Key claim without INSERT … ON CONFLICT (http/idempotency-claim.ts): a new key is
 * a plain insert, with no speculative insertion's confirm record, and concurrent claims of one
 * key still have one winner.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const claimOf = (key: string): KeyClaim => ({
  tenantId: newId(),
  environment: 'sandbox',
  key,
  fingerprint: 'f'.repeat(64),
  token: newId(),
});
const owner = newId();

describe('the Idempotency-Key claim', () => {
  it.skipIf(process.env.DATABASE_URL === undefined)(
    'writes one heap insert for a new key, and no speculative insertion confirm',
    async () => {
      const tenant = await t.tenant('Claim WAL Ltd');
      const api = clientFor(t, tenant.sandbox.secret_key);
      const records = await walRecordsOf(t.db, async () => {
        expect((await api.post('/v1/customers', johnDoe({ email: 'wal@example.com' }))).status).toBe(200);
      });
      const keys = records.filter((r) => r.endsWith(' idempotency_keys'));
      expect(keys).not.toContain('HEAP_CONFIRM idempotency_keys');
      expect(keys.filter((r) => r.startsWith('INSERT'))).toHaveLength(1);
    },
  );

  it('claims a new key, not a key another claim holds, and takes over one past its retention', async () => {
    const fresh = claimOf(`claim-${newId()}`);
    expect((await t.db.executeQuery(claimKeys(t.db, [fresh], owner, 24))).rows).toEqual([{ claim_token: fresh.token }]);
    const again = { ...fresh, token: newId() };
    expect((await t.db.executeQuery(claimKeys(t.db, [again], owner, 24))).rows).toEqual([]);
    await sql`update idempotency_keys set expires_at = now() - interval '1 second' where key = ${fresh.key}`.execute(t.db);
    expect((await t.db.executeQuery(claimKeys(t.db, [again], owner, 24))).rows).toEqual([{ claim_token: again.token }]);
  });

  it.skipIf(process.env.DATABASE_URL === undefined)(
    'two claims of one new key at once: the second waits, fails as a race, and claimed again finds the first',
    async () => {
      const first = claimOf(`race-${newId()}`);
      const second = { ...first, token: newId() };
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let claimedFirst!: () => void;
      const firstIn = new Promise<void>((r) => (claimedFirst = r));
      const one = t.db.transaction().execute(async (trx) => {
        const rows = (await trx.executeQuery(claimKeys(trx, [first], owner, 24))).rows;
        claimedFirst();
        await held;
        return rows;
      });
      await firstIn;
      const two = t.db.transaction().execute((trx) => trx.executeQuery(claimKeys(trx, [second], owner, 24)));
      const waiting = await Promise.race([
        two.then(
          () => 'ended',
          () => 'ended',
        ),
        new Promise((r) => setTimeout(() => r('waiting'), 300)),
      ]);
      expect(waiting).toBe('waiting');
      release();
      expect(await one).toEqual([{ claim_token: first.token }]);
      const err = await two.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isClaimRace(err)).toBe(true);
      expect((await t.db.executeQuery(claimKeys(t.db, [second], owner, 24))).rows).toEqual([]);
    },
  );
});
