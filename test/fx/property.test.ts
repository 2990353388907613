import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { newCustomer, openAccount } from '../fx-helpers.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/**
 * Property: random conversions never create or lose a minor unit. For every random market order
 * at a random simulated rate: the customer's debit and credit follow the rounding rule (the
 * amount given is exact, the amount received rounds down; buying, the amount bought is exact and
 * the amount paid rounds up), the fx_position accounts take the other side of each leg exactly,
 * and every currency's ledger entries still sum to zero. The expected figures are computed here
 * with their own rational arithmetic, not with the code under test.
 */
let t: TestApp;
let biz: CreatedTenant;
let api: Client;
const CCYS = ['USD', 'NGN', 'UGX', 'EUR', 'XOF', 'KES'] as const;
const EXP: Record<string, number> = { USD: 2, NGN: 2, UGX: 0, EUR: 2, XOF: 0, KES: 2 };
const accounts: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant('Property FX');
  api = clientFor(t, biz.sandbox.secret_key);
  const customer = await newCustomer(api);
  for (const c of CCYS) accounts[c] = await openAccount(api, c, customer, '100000000');
});
afterAll(async () => t?.close());

const minor = (text: string) => BigInt(text.replace('.', ''));
const pow10 = (n: number) => 10n ** BigInt(n);

function format(units: bigint, exp: number): string {
  if (exp === 0) return units.toString();
  const s = units.toString().padStart(exp + 1, '0');
  return `${s.slice(0, -exp)}.${s.slice(-exp)}`;
}

/** A decimal string as an exact fraction num / 10^scale. */
function fraction(text: string): { num: bigint; scale: number } {
  const [w, f = ''] = text.split('.');
  return { num: BigInt(`${w}${f}`), scale: f.length };
}

async function balanceOf(accountId: string): Promise<bigint> {
  return minor((await api.get(`/v1/accounts/${accountId}`)).body.data.balance);
}

async function positions(): Promise<Map<string, bigint>> {
  const rows = await t.db
    .selectFrom('ledger_balances')
    .innerJoin('ledger_accounts', 'ledger_accounts.id', 'ledger_balances.account_id')
    .select(['ledger_accounts.currency', 'ledger_balances.posted'])
    .where('ledger_accounts.tenant_id', '=', biz.tenant_id)
    .where('ledger_accounts.system_role', '=', 'fx_position')
    .execute();
  return new Map(rows.map((r) => [r.currency, r.posted]));
}

const order = fc.record({
  base: fc.constantFrom(...CCYS),
  quote: fc.constantFrom(...CCYS),
  side: fc.constantFrom('buy' as const, 'sell' as const),
  amountMinor: fc.bigInt({ min: 1n, max: 5_000_000n }),
  midDigits: fc.integer({ min: 1, max: 2_000_000_000 }),
  midScale: fc.integer({ min: 0, max: 9 }),
});

describe('FX conservation property', () => {
  it('never creates or loses a minor unit across the two legs', async () => {
    await fc.assert(
      fc.asyncProperty(
        order.filter((o) => o.base !== o.quote),
        async ({ base, quote, side, amountMinor, midDigits, midScale }) => {
          const mid = format(BigInt(midDigits), midScale);
          if (BigInt(midDigits) / pow10(midScale) >= 1_000_000_000n) return;
          expect((await api.post('/v1/simulations/fx/rates', { base, quote, rate: mid })).status).toBe(200);
          const source = side === 'sell' ? base : quote;
          const destination = side === 'sell' ? quote : base;
          const before = { src: await balanceOf(accounts[source]!), dst: await balanceOf(accounts[destination]!), pos: await positions() };

          const res = await api.post('/v1/fx/orders', {
            order_type: 'market',
            side,
            pair: { base, quote },
            amount: format(amountMinor, EXP[base]!),
            source_id: accounts[source],
            destination_id: accounts[destination],
          });
          const after = { src: await balanceOf(accounts[source]!), dst: await balanceOf(accounts[destination]!), pos: await positions() };
          if (res.status !== 200) {
            // Too small to convert (400) or too expensive (422): nothing moved.
            expect([400, 422]).toContain(res.status);
            expect(after).toEqual(before);
            return;
          }
          const o = res.body.data;
          // The customer rate: the mid less (sell) or plus (buy) 50 bps, rounded to 12 decimals in favour of the house.
          const m = fraction(mid);
          const midFixed = m.num * pow10(12 - m.scale);
          const bps = side === 'sell' ? 9950n : 10050n;
          const rate = side === 'sell' ? (midFixed * bps) / 10000n : (midFixed * bps + 9999n) / 10000n;
          expect(minor(o.rate.padEnd(o.rate.indexOf('.') + 13, '0'))).toBe(rate);
          // Exact value of the counter amount in quote minor units, as a fraction n / d.
          const n = amountMinor * rate * pow10(EXP[quote]!);
          const d = pow10(12) * pow10(EXP[base]!);
          const counter = side === 'sell' ? n / d : (n + d - 1n) / d;
          expect(minor(o.converted_amount)).toBe(counter);
          // Rounded at most one minor unit, always against the customer.
          const slack = side === 'sell' ? n - counter * d : counter * d - n;
          expect(slack >= 0n && slack < d).toBe(true);

          const given = side === 'sell' ? amountMinor : counter;
          const received = side === 'sell' ? counter : amountMinor;
          expect(before.src - after.src).toBe(given);
          expect(after.dst - before.dst).toBe(received);
          expect((after.pos.get(source) ?? 0n) - (before.pos.get(source) ?? 0n)).toBe(given);
          expect((before.pos.get(destination) ?? 0n) - (after.pos.get(destination) ?? 0n)).toBe(received);
        },
      ),
      { numRuns: 40 },
    );

    const sums = await t.db
      .selectFrom('ledger_entries')
      .select(['currency', sql<string>`sum(amount)`.as('total'), sql<string>`count(*)`.as('n')])
      .where('tenant_id', '=', biz.tenant_id)
      .groupBy('currency')
      .execute();
    expect(sums.length).toBe(CCYS.length);
    for (const s of sums) expect(BigInt(s.total), s.currency).toBe(0n);
    const orders = await t.db
      .selectFrom('fx_orders')
      .select(sql<string>`count(*)`.as('n'))
      .where('tenant_id', '=', biz.tenant_id)
      .executeTakeFirstOrThrow();
    expect(Number(orders.n)).toBeGreaterThan(5);
  });
});
