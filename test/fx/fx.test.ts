import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { convertAmount, getRate } from '../../src/modules/fx/service.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/** FX reference data, the sandbox rate simulation and quotes. Orders: orders.test.ts. */
let t: TestApp;
let biz: CreatedTenant;
let api: Client;
let pub: Client;
let live: Client;
let other: Client;

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant('FX Co');
  api = clientFor(t, biz.sandbox.secret_key);
  pub = clientFor(t, biz.sandbox.public_key);
  live = clientFor(t, biz.live.secret_key);
  other = clientFor(t, (await t.tenant('Other FX')).sandbox.secret_key);
});
afterAll(async () => t?.close());

describe('supported currencies and rates', () => {
  it('lists every fiat pair of the configured currencies, public key allowed', async () => {
    const res = await pub.get('/v1/fx/supported-currencies');
    expect(res.status).toBe(200);
    const pairs = res.body.data as { currency_pair: string }[];
    expect(pairs).toHaveLength(11 * 10);
    expect(pairs).toContainEqual({
      from_currency: 'USD',
      to_currency: 'ZAR',
      currency_pair: 'USD/ZAR',
      pair_type: 'fiat/fiat',
      from_currency_name: 'US Dollar',
      to_currency_name: 'South African Rand',
    });
    expect((await api.get('/v1/fx/supported-currencies?include_crypto=true')).body.data).toHaveLength(110);
    expect((await api.get('/v1/fx/supported-currencies?include_crypto=maybe')).status).toBe(400);
  });

  it('gives BUY and SELL rates as decimal strings around the mid rate', async () => {
    const res = await pub.get('/v1/fx/rates?currency_pairs=USD/NGN');
    expect(res.status).toBe(200);
    const [buy, sell] = res.body.data;
    expect(buy).toMatchObject({
      direction: 'BUY',
      currency_pair: 'USD/NGN',
      mid_rate: '1550.00',
      rate: '1557.75',
      spread_bps: 50,
      pair_type: 'fiat/fiat',
    });
    expect(sell).toMatchObject({ direction: 'SELL', mid_rate: '1550.00', rate: '1542.25', from_currency_name: 'US Dollar' });
    expect(typeof sell.rate).toBe('string');
    expect(new Date(sell.timestamp).toISOString()).toBe(sell.timestamp);
  });

  it('filters by from/to/direction and answers unknown currencies with an empty list', async () => {
    const usd = (await api.get('/v1/fx/rates?from_currency=USD&direction=SELL')).body.data;
    expect(usd).toHaveLength(10);
    expect(usd.every((r: { from_currency: string; direction: string }) => r.from_currency === 'USD' && r.direction === 'SELL')).toBe(true);
    expect((await api.get('/v1/fx/rates?from_currency=EUR&to_currency=GBP')).body.data).toHaveLength(2);
    expect((await api.get('/v1/fx/rates?from_currency=KWD')).body.data).toEqual([]);
    expect((await api.get('/v1/fx/rates')).body.data).toHaveLength(220);
  });

  it('rejects malformed filters with 400', async () => {
    const bad = await api.get('/v1/fx/rates?currency_pairs=USDZAR');
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('currency_pairs');
    expect((await api.get('/v1/fx/rates?direction=HOLD')).status).toBe(400);
    expect((await api.get('/v1/fx/rates?colour=red')).status).toBe(400);
  });

  it('uses the business spread setting', async () => {
    const tenant = await t.tenant('Tight spread');
    await t.db
      .updateTable('tenants')
      .set({ settings: JSON.stringify({ fx_spread_bps: 0 }) })
      .where('id', '=', tenant.tenant_id)
      .execute();
    const res = await clientFor(t, tenant.sandbox.public_key).get('/v1/fx/rates?currency_pairs=USD/NGN&direction=SELL');
    expect(res.body.data[0]).toMatchObject({ rate: '1550.00', spread_bps: 0 });
  });
});

describe('service functions for other modules (international payouts)', () => {
  it('gives the current rate of a pair and converts exactly by the rounding rule', async () => {
    const scope = { tenantId: biz.tenant_id, environment: 'sandbox' as const, settings: {} };
    const r = await getRate(t.db, scope, 'EUR', 'NGN', 'sell', t.config);
    expect(r).toMatchObject({ base: 'EUR', quote: 'NGN', side: 'sell', spreadBps: 50 });
    expect(r.midRate).toBe('1684.782608695652'); // 1550 / 0.92, half-up at 12 decimals
    expect(convertAmount(1001n, 'USD', 'UGX', '3700.5')).toBe(37042n); // 37042.005 rounds down
    expect(convertAmount(1001n, 'USD', 'UGX', '3700.5', 'up')).toBe(37043n);
    await expect(getRate(t.db, scope, 'EUR', 'KWD', 'sell', t.config)).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

describe('OpenAPI', () => {
  it('documents the FX routes', async () => {
    const doc = (await t.request('GET', '/v1/openapi.json')).body;
    for (const path of [
      '/v1/fx/rates',
      '/v1/fx/supported-currencies',
      '/v1/fx/quote',
      '/v1/fx/orders',
      '/v1/fx/orders/{order_id}',
      '/v1/fx/orders/{order_id}/cancel',
      '/v1/simulations/fx/rates',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
  });
});

describe('POST /v1/simulations/fx/rates', () => {
  it('sets the sandbox mid rate of a pair and its reverse, for this business and environment only', async () => {
    const res = await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'KES', rate: '130' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ base: 'USD', quote: 'KES', rate: '130.00', inverse_rate: '0.007692307692' });
    const rates = (await api.get('/v1/fx/rates?currency_pairs=USD/KES,KES/USD&direction=SELL')).body.data;
    expect(rates.map((r: { mid_rate: string }) => r.mid_rate)).toEqual(['130.00', '0.007692307692']);
    expect((await other.get('/v1/fx/rates?currency_pairs=USD/KES&direction=SELL')).body.data[0].mid_rate).toBe('129.50');
    // Setting the reverse pair replaces the first one: the two directions never disagree.
    await api.post('/v1/simulations/fx/rates', { base: 'KES', quote: 'USD', rate: 0.008 });
    const again = (await api.get('/v1/fx/rates?currency_pairs=USD/KES,KES/USD&direction=SELL')).body.data;
    expect(again.map((r: { mid_rate: string }) => r.mid_rate)).toEqual(['125.00', '0.008']);
  });

  it('is sandbox only (404 with a live key), secret key only, and validates its body', async () => {
    const liveRes = await live.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'KES', rate: '130' });
    expect(liveRes.status).toBe(404);
    expect(liveRes.body.error.code).toBe('not_found');
    expect((await pub.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'KES', rate: '130' })).status).toBe(403);
    const cases: [unknown, string][] = [
      [{ base: 'USD', quote: 'KES', rate: '0' }, 'rate'],
      [{ base: 'USD', quote: 'KES', rate: '-1' }, 'rate'],
      [{ base: 'USD', quote: 'KES', rate: '1.1234567890123' }, 'rate'],
      [{ base: 'USD', quote: 'USD', rate: '1' }, 'quote'],
      [{ base: 'USD', quote: 'KWD', rate: '1' }, 'quote'],
      [{ base: 'usd', quote: 'KES', rate: '1' }, 'base'],
      [{ base: 'USD', quote: 'KES' }, 'rate'],
      [{ base: 'USD', quote: 'KES', rate: '1', extra: true }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await api.post('/v1/simulations/fx/rates', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
  });
});

describe('POST /v1/fx/quote', () => {
  it('quotes a SELL: the amount given is exact, the amount received rounds down', async () => {
    await api.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'UGX', rate: '3700.37' });
    const res = await api.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'UGX', amount: '10.01', direction: 'SELL' });
    expect(res.status).toBe(200);
    const q = res.body.data;
    // bid = 3700.37 * 0.995 = 3681.86815; 10.01 * 3681.86815 = 36855.5801... -> 36855 UGX
    expect(q).toMatchObject({
      from_currency: 'USD',
      to_currency: 'UGX',
      amount: '10.01',
      direction: 'SELL',
      rate: '3681.86815',
      mid_rate: '3700.37',
      to_currency_amount: '36855',
      fee: '0.00',
      fee_currency: 'USD',
    });
    expect(q.display_rate_label).toBe('1 USD = 3681.86815 UGX');
    const ttl = new Date(q.expires_at).getTime() - new Date(q.created_at).getTime();
    expect(ttl).toBeGreaterThan(29_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
  });

  it('quotes a BUY: the amount bought is exact, the amount paid rounds up', async () => {
    const res = await api.post('/v1/fx/quote', { from_currency: 'USD', to_currency: 'UGX', amount: 10.01, direction: 'BUY' });
    // ask = 3700.37 * 1.005 = 3718.87185; 10.01 * 3718.87185 = 37225.9072... -> 37226 UGX
    expect(res.body.data).toMatchObject({ rate: '3718.87185', to_currency_amount: '37226', fee_currency: 'UGX' });
  });

  it('rejects bad input with 400', async () => {
    const cases: [unknown, string, string][] = [
      [{ from_currency: 'USD', to_currency: 'NGN', amount: '0', direction: 'SELL' }, 'amount', 'invalid_amount'],
      [{ from_currency: 'USD', to_currency: 'NGN', amount: '1.001', direction: 'SELL' }, 'amount', 'invalid_amount'],
      [{ from_currency: 'USD', to_currency: 'NGN', amount: -5, direction: 'SELL' }, 'amount', 'invalid_amount'],
      [{ from_currency: 'USD', to_currency: 'NGN', amount: '10', direction: 'HOLD' }, 'direction', 'validation_failed'],
      [{ from_currency: 'USD', to_currency: 'NGN', amount: '10', direction: 'sell' }, 'direction', 'validation_failed'],
      [{ from_currency: 'KWD', to_currency: 'NGN', amount: '10', direction: 'SELL' }, 'from_currency', 'validation_failed'],
      [{ from_currency: 'NGN', to_currency: 'NGN', amount: '10', direction: 'SELL' }, 'to_currency', 'validation_failed'],
      [{ to_currency: 'NGN', amount: '10', direction: 'SELL' }, 'from_currency', 'validation_failed'],
      [{ from_currency: 'USD', to_currency: 'NGN', amount: '10', direction: 'SELL', crypto: 1 }, 'crypto', 'validation_failed'],
      [{ from_currency: 'NGN', to_currency: 'USD', amount: '0.01', direction: 'SELL' }, 'amount', 'invalid_amount'],
      [{ from_currency: 'USD', to_currency: 'UGX', amount: '9999999999999.99', direction: 'SELL' }, 'amount', 'invalid_amount'],
      [{ from_currency: 'USD', to_currency: 'NGN', amount: '1000000000000000', direction: 'SELL' }, 'amount', 'invalid_amount'],
    ];
    for (const [body, field, code] of cases) {
      const res = await api.post('/v1/fx/quote', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe(code);
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    const missingKey = await api.post(
      '/v1/fx/quote',
      { from_currency: 'USD', to_currency: 'NGN', amount: '10', direction: 'SELL' },
      { idempotencyKey: null },
    );
    expect(missingKey.body.error.code).toBe('missing_idempotency_key');
  });

  it('replays an idempotent quote request unchanged', async () => {
    const body = { from_currency: 'EUR', to_currency: 'GBP', amount: '100', direction: 'SELL' };
    const first = await api.post('/v1/fx/quote', body, { idempotencyKey: 'quote-1' });
    const second = await api.post('/v1/fx/quote', body, { idempotencyKey: 'quote-1' });
    expect(second.headers['idempotency-replayed']).toBe('true');
    expect(second.body.data.quote_id).toBe(first.body.data.quote_id);
    const count = await t.db
      .selectFrom('fx_quotes')
      .select(sql<string>`count(*)`.as('n'))
      .where('id', '=', first.body.data.quote_id)
      .executeTakeFirst();
    expect(Number(count?.n)).toBe(1);
  });

  it('follows the configured TTL', async () => {
    const short = await startTestApp({ FX_QUOTE_TTL_SECONDS: 5 });
    try {
      const tenant = await short.tenant();
      const q = (
        await clientFor(short, tenant.sandbox.secret_key).post('/v1/fx/quote', {
          from_currency: 'USD',
          to_currency: 'NGN',
          amount: '1',
          direction: 'SELL',
        })
      ).body.data;
      expect(new Date(q.expires_at).getTime() - new Date(q.created_at).getTime()).toBe(5_000);
    } finally {
      await short.close();
    }
  });
});
