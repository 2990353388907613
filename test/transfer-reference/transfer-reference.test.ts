import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

/** GET /v1/transfer/rates and /v1/transfer/supported-*: public-key reference data (docs/api-rules.md#keys-and-environments). */
let t: TestApp;
let pub: Client;
let sec: Client;

beforeAll(async () => {
  t = await startTestApp();
  const biz = await t.tenant();
  pub = clientFor(t, biz.sandbox.public_key);
  sec = clientFor(t, biz.sandbox.secret_key);
});
afterAll(() => t.close());

describe('transfer reference data', () => {
  it('answers all four operations with a public key and with a secret key', async () => {
    for (const path of [
      '/v1/transfer/rates',
      '/v1/transfer/supported-currencies',
      '/v1/transfer/supported-countries',
      '/v1/transfer/supported-countries-for-address',
    ]) {
      for (const api of [pub, sec]) {
        const res = await api.get(path);
        expect(res.status, path).toBe(200);
        expect(res.body.error).toBeNull();
      }
    }
  });

  it('lists the payee currencies that FX can price, filtered by code and name', async () => {
    const all = (await pub.get('/v1/transfer/supported-currencies')).body.data.currencies as { code: string; name: string }[];
    const codes = all.map((c) => c.code);
    for (const c of ['NGN', 'GHS', 'KES', 'UGX', 'ZAR', 'USD', 'EUR', 'GBP']) expect(codes).toContain(c);
    // XOF is an FX currency but no payee is paid in it.
    expect(codes).not.toContain('XOF');
    expect(all.find((c) => c.code === 'NGN')?.name).toBe('Nigerian Naira');
    expect((await pub.get('/v1/transfer/supported-currencies?code=ngn')).body.data.currencies).toEqual([
      { code: 'NGN', name: 'Nigerian Naira' },
    ]);
    const named = (await pub.get('/v1/transfer/supported-currencies?name=shilling')).body.data.currencies.map(
      (c: { code: string }) => c.code,
    );
    expect(named.sort()).toEqual(['KES', 'UGX']);
  });

  it('lists payout countries with alpha-3 codes and their payout currency', async () => {
    const res = await pub.get('/v1/transfer/supported-countries');
    const ng = res.body.data.countries.find((c: { iso_code: string }) => c.iso_code === 'NG');
    expect(ng).toEqual({ currency_code: 'NGN', iso3_code: 'NGA', iso_code: 'NG', name: 'Nigeria' });
    const de = res.body.data.countries.find((c: { iso_code: string }) => c.iso_code === 'DE');
    expect(de.currency_code).toBe('EUR');
    expect(
      (await pub.get('/v1/transfer/supported-countries?iso_code=gh')).body.data.countries.map((c: { iso_code: string }) => c.iso_code),
    ).toEqual(['GH']);
    // Not a payout country: no institution there.
    expect((await pub.get('/v1/transfer/supported-countries?iso_code=JP')).body.data.countries).toEqual([]);
  });

  it('lists address countries with their ISO 3166-2 subdivisions', async () => {
    const ng = (await pub.get('/v1/transfer/supported-countries-for-address?iso_code=NG')).body.data.countries;
    expect(ng).toHaveLength(1);
    expect(ng[0].name).toBe('Nigeria');
    expect(ng[0].states).toContainEqual({ code: 'NG-LA', name: 'Lagos' });
    const byName = (await pub.get('/v1/transfer/supported-countries-for-address?name=united')).body.data.countries.map(
      (c: { iso_code: string }) => c.iso_code,
    );
    expect(byName).toContain('US');
    expect(byName).toContain('GB');
    const all = (await pub.get('/v1/transfer/supported-countries-for-address')).body.data.countries;
    expect(all.length).toBeGreaterThan(200);
  });

  it('gives the same customer rate as the FX module, as decimal strings, paginated', async () => {
    await sec.post('/v1/simulations/fx/rates', { base: 'USD', quote: 'NGN', rate: '1500' });
    await sec.post('/v1/simulations/fx/rates', { base: 'EUR', quote: 'NGN', rate: '1650' });
    const fx = await pub.get('/v1/fx/rates?currency_pairs=USD/NGN,EUR/NGN&direction=SELL');
    const fxRate = (pair: string) => fx.body.data.find((r: { currency_pair: string }) => r.currency_pair === pair).rate;
    const res = await pub.get('/v1/transfer/rates?country_iso_code=NG');
    expect(res.body.data).toMatchObject({ page: 1, items_per_page: 10, total_pages: 1, total_items: 1 });
    expect(res.body.data.items).toEqual([
      { country_iso_code: 'NG', currency: 'NGN', usd_rate: fxRate('USD/NGN'), eur_rate: fxRate('EUR/NGN') },
    ]);
    const us = (await pub.get('/v1/transfer/rates?currency=usd')).body.data.items;
    expect(us).toEqual([{ country_iso_code: 'US', currency: 'USD', usd_rate: '1', eur_rate: expect.stringMatching(/^\d+\.\d+$/) }]);
    const page2 = await pub.get('/v1/transfer/rates?items_per_page=2&page=2');
    expect(page2.body.data.items).toHaveLength(2);
    expect(page2.body.data.total_pages).toBe(Math.ceil(page2.body.data.total_items / 2));
  });

  it('refuses bad filters with 400', async () => {
    for (const path of [
      '/v1/transfer/rates?country_iso_code=NGA',
      '/v1/transfer/rates?items_per_page=101',
      '/v1/transfer/supported-currencies?code=N',
      '/v1/transfer/supported-countries?bogus=1',
    ]) {
      const res = await pub.get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
  });
});
