import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as ledger from '../../src/ledger/index.js';
import { AppError } from '../../src/core/errors.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/**
 * Random interleavings of funding and transfers (over HTTP, with reused idempotency keys) and
 * holds (ledger API directly), checked against an in-memory model after every run: zero sum,
 * conservation, no negative available balance, balance = sum of entries, one effect per key.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const ACCOUNTS = 3;
type Op =
  | { kind: 'fund'; account: number; amount: number; key: number }
  | { kind: 'transfer'; from: number; to: number; amount: number; key: number }
  | { kind: 'hold'; account: number; amount: number }
  | { kind: 'post'; hold: number; fraction: number }
  | { kind: 'void'; hold: number };

const amount = fc.integer({ min: 1, max: 5_000 }); // minor units
const account = fc.integer({ min: 0, max: ACCOUNTS - 1 });
const key = fc.integer({ min: 0, max: 6 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('fund' as const), account, amount, key }),
  fc.record({ kind: fc.constant('transfer' as const), from: account, to: account, amount, key }),
  fc.record({ kind: fc.constant('transfer' as const), from: account, to: account, amount, key }),
  fc.record({ kind: fc.constant('hold' as const), account, amount }),
  fc.record({ kind: fc.constant('post' as const), hold: fc.nat(10), fraction: fc.integer({ min: 1, max: 100 }) }),
  fc.record({ kind: fc.constant('void' as const), hold: fc.nat(10) }),
);

const major = (minor: number) => (minor / 100).toFixed(2);

async function runScenario(ops: Op[]) {
  const tenant = await t.tenant('Prop');
  const api = clientFor(t, tenant.sandbox.secret_key);
  const scope = { tenantId: tenant.tenant_id, environment: 'sandbox' as const };
  const ids: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) ids.push((await api.post('/v1/accounts', { currency: 'NGN', label: `p${i}` })).body.data.id);
  const sink = await t.db.transaction().execute((trx) => ledger.systemAccount(trx, scope, 'card_settlement', 'NGN'));
  const posted = ids.map(() => 0);
  const held = ids.map(() => 0);
  const keys = new Map<string, string>(); // key -> request fingerprint (one effect per key)
  const holds: { id: string; account: number; amount: number; open: boolean }[] = [];

  for (const o of ops) {
    if (o.kind === 'fund' || o.kind === 'transfer') {
      const path = o.kind === 'fund' ? `/v1/simulations/accounts/${ids[o.account]}/fund` : '/v1/transfers';
      const body =
        o.kind === 'fund'
          ? { amount: major(o.amount) }
          : { source: { id: ids[o.from] }, destination: { destination_type: 'internal_account', id: ids[o.to] }, amount: major(o.amount) };
      const k = `${o.kind === 'fund' ? `f${o.account}` : 't'}-${o.key}`;
      const fingerprint = JSON.stringify(body);
      const res = await api.post(path, body, { idempotencyKey: `${tenant.tenant_id}-${k}` });
      const seen = keys.get(k);
      if (seen !== undefined) {
        expect(res.status).toBe(seen === fingerprint ? res.status : 422);
        if (seen === fingerprint) expect(res.headers['idempotency-replayed']).toBe('true');
        continue;
      }
      if (o.kind === 'transfer' && o.from === o.to) {
        expect(res.status).toBe(400); // not stored: the key stays free
        continue;
      }
      keys.set(k, fingerprint);
      if (o.kind === 'fund') {
        expect(res.status).toBe(200);
        posted[o.account]! += o.amount;
      } else if (posted[o.from]! - held[o.from]! >= o.amount) {
        expect(res.status).toBe(200);
        posted[o.from]! -= o.amount;
        posted[o.to]! += o.amount;
      } else {
        expect(res.body.error.code).toBe('insufficient_funds');
      }
    } else if (o.kind === 'hold') {
      const result = await t.db
        .transaction()
        .execute((trx) =>
          ledger.hold(trx, scope, {
            debitAccountId: ids[o.account]!,
            creditAccountId: sink,
            amount: BigInt(o.amount),
            currency: 'NGN',
            kind: 'card',
          }),
        )
        .catch((e: unknown) => e);
      if (posted[o.account]! - held[o.account]! >= o.amount) {
        expect(result).not.toBeInstanceOf(Error);
        holds.push({ id: (result as ledger.Hold).id, account: o.account, amount: o.amount, open: true });
        held[o.account]! += o.amount;
      } else {
        expect((result as AppError).code).toBe('insufficient_funds');
      }
    } else {
      const h = holds[o.hold];
      if (!h) continue;
      const part = o.kind === 'post' ? Math.max(1, Math.floor((h.amount * o.fraction) / 100)) : 0;
      const result = await t.db
        .transaction()
        .execute(
          async (trx): Promise<unknown> =>
            o.kind === 'post' ? ledger.postHold(trx, scope, h.id, BigInt(part)) : ledger.voidHold(trx, scope, h.id),
        )
        .catch((e: unknown) => e);
      if (!h.open) {
        expect((result as AppError).code).toBe('invalid_state_transition');
        continue;
      }
      h.open = false;
      held[h.account]! -= h.amount;
      posted[h.account]! -= part;
    }
  }

  const balances = await ledger.getBalances(t.db, scope, ids);
  ids.forEach((id, i) => {
    const b = balances.get(id)!;
    expect(b.posted).toBe(BigInt(posted[i]!));
    expect(b.available).toBe(BigInt(posted[i]! - held[i]!));
    expect(b.available >= 0n).toBe(true);
  });
  const report = await ledger.reconcile(t.db, tenant.tenant_id);
  expect(report.ok).toBe(true);
  // Conservation: every ledger account of the business, system ones included, sums to zero.
  const total = await t.db
    .selectFrom('ledger_balances')
    .select((eb) => eb.fn.sum<string>('posted').as('s'))
    .where('tenant_id', '=', tenant.tenant_id)
    .executeTakeFirst();
  expect(BigInt(total?.s ?? 0)).toBe(0n);
}

describe('ledger properties', () => {
  it('keeps every invariant under random interleavings', async () => {
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), runScenario), { numRuns: 25 });
  }, 240_000);
});
