import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { batchClaim, claimKeys, isClaimRace, lockKeys, type KeyClaim } from '../../src/http/idempotency-claim.js';
import { pipelined } from '../../src/db/pipeline.js';
import { newId } from '../../src/lib/ids.js';
import { clientFor, johnDoe, startTestApp, type TestApp } from '../harness.js';
import { planCounts } from '../plans.js';
import { holdBalanceRow, waitersAtLeast } from '../row-locks.js';
import { walRecordsOf } from '../wal-records.js';

/**
 * The Idempotency-Key claim without INSERT … ON CONFLICT (http/idempotency-claim.ts): a new key is
 * a plain insert, with no speculative insertion's confirm record, and concurrent claims of one
 * key still have one winner. A lone claim waits on the key's lock while a batch holds it.
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

  it.skipIf(process.env.DATABASE_URL === undefined)(
    "a lone claim waits while a batch holds the key's lock; the batch rolled back, the claim takes the key",
    async () => {
      const claim = claimOf(`locked-${newId()}`);
      let rollBack!: () => void;
      const held = new Promise<void>((r) => (rollBack = r));
      let lockedIt!: () => void;
      const locked = new Promise<void>((r) => (lockedIt = r));
      // A batch's transaction (idempotency-batch.ts): the key's lock, no record until its commit.
      const batch = t.db
        .transaction()
        .execute(async (trx) => {
          await trx.executeQuery(lockKeys(trx, [claim]));
          lockedIt();
          await held;
          throw new Error('rolled back');
        })
        .catch(() => undefined);
      await locked;
      const lone = { ...claim, token: newId() };
      const claiming = t.db.executeQuery(claimKeys(t.db, [lone], owner, 24));
      await waitersAtLeast(t.db, 1);
      rollBack();
      await batch;
      expect((await claiming).rows).toEqual([{ claim_token: lone.token }]);
    },
  );
});

describe.skipIf(process.env.DATABASE_URL === undefined)('two processes, one new key, at once', () => {
  it("the second batch waits on the key's lock until the first commits, then replays its answer: one transfer", async () => {
    // A second app on the same database: its own batcher and lanes, as another process has.
    const other = await t.otherApp();
    onTestFinished(() => other.close());
    const tenant = await t.tenant('Two Processes Ltd');
    const api = clientFor(t, tenant.sandbox.secret_key);
    const open = async () => (await api.post('/v1/accounts', { currency: 'NGN', label: 'p' })).body.data.id as string;
    const [from, to] = [await open(), await open()];
    expect((await api.post(`/v1/simulations/accounts/${from}/fund`, { amount: '10.00' })).status).toBe(200);
    const payload = JSON.stringify({ source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount: '1.00' });
    const headers = { 'api-key': tenant.sandbox.secret_key, 'idempotency-key': `two-${from}`, 'content-type': 'application/json' };
    const send = (app: FastifyInstance) => app.inject({ method: 'POST', url: '/v1/transfers', headers, payload });
    // The first batch takes the key's lock, then waits on the source's balance row, held here; the
    // second's claim then waits on the key's lock.
    const release = await holdBalanceRow(t.db, from);
    const first = send(t.app);
    await waitersAtLeast(t.db, 1);
    const second = send(other);
    await waitersAtLeast(t.db, 2);
    await release();
    const [a, b] = await Promise.all([first, second]);
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    expect(b.body).toBe(a.body);
    expect(b.headers['idempotency-replayed']).toBe('true');
    expect((await api.get(`/v1/transfers?account_id=${from}`)).body.data.total_items).toBe(1);
  });
});

describe("a batch's claim", () => {
  // Prepared statements are per connection, and a transaction keeps one: its claims share a plan cache.
  it.skipIf(process.env.DATABASE_URL === undefined)('reuses one generic plan instead of planning every batch anew', async () => {
    const plans = await planCounts(t.db, '%select claim_token, false as fresh from taken%', (trx, i) => {
      const claims = Array.from({ length: 1 + (i % 3) }, (_, k) => claimOf(`plan-${i}-${k}`));
      return pipelined(trx, ...batchClaim(trx, claims, owner, 24));
    });
    // Every execution on a generic plan (the connection may have named the statement at its first or second use).
    expect(plans).toHaveLength(1);
    expect(plans[0]!.custom_plans).toBe(0);
    expect(plans[0]!.generic_plans).toBeGreaterThanOrEqual(7);
  });

  it('is built and compiled once: a later batch carries only its own arrays, owner and retention', async () => {
    const claims = (n: number) => Array.from({ length: n }, (_, k) => claimOf(`once-${newId()}-${k}`));
    batchClaim(t.db, claims(1), owner, 24);
    const second = batchClaim(t.db, claims(2), owner, 24);
    const third = claims(3);
    const otherOwner = newId();
    const statements = batchClaim(t.db, third, otherOwner, 48);
    // The same query tree as the batch before: nothing built or compiled for this one.
    statements.forEach((s, i) => expect(s.query).toBe(second[i]!.query));
    const [locks, , claim] = statements;
    expect(locks.parameters).toEqual([third.map((c) => c.tenantId), third.map((c) => c.environment), third.map((c) => c.key)]);
    expect(claim.parameters).toContain(otherOwner);
    expect(claim.parameters).toContain(48);
    expect(claim.parameters.slice(0, 5)).toEqual([
      third.map((c) => c.tenantId),
      third.map((c) => c.environment),
      third.map((c) => c.key),
      third.map((c) => c.fingerprint),
      third.map((c) => c.token),
    ]);
    // And it claims what it was given: three new keys.
    const rows = await t.db.transaction().execute((trx) => pipelined(trx, ...statements));
    expect(rows[2]).toEqual(third.map((c) => ({ claim_token: c.token, fresh: true })));
  });
});
