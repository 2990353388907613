import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { InvalidStoredSettings, parseBusinessSettings } from '../../src/core/settings.js';
import { InvalidSettings, lookupKey, setSettings, settingsOf } from '../../src/modules/tenants/service.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/** Configuration JSON parsed and checked once at start; business settings typed by one schema, checked on write. */
const refused = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe('JSON configuration', () => {
  it('is parsed once into typed tables, defaults included', () => {
    const config = loadConfig({
      PAYOUT_FEES: '{"wire": {"USD": {"flat": "15.00"}}, "*": {"*": {"bps": 25}}}',
      KYC_LIMITS: '{"basic": {"USD": {"per_transaction": "500", "daily": 2000}}}',
    });
    expect(config.PAYOUT_FEES.wire!.USD!.flat).toBe('15.00');
    expect(config.PAYOUT_FEES['*']!['*']!.bps).toBe(25);
    expect(config.KYC_LIMITS!.basic!.USD!.daily).toBe(2000);
    const defaults = loadConfig({});
    expect(defaults.PAYOUT_FEES).toEqual({ '*': { '*': { bps: 50 } } });
    expect(defaults.PAYOUT_LIMITS['*']!.USD).toBe('100000');
    expect(defaults.KYC_LIMITS).toBeUndefined();
  });

  it('fails at start with the variable and the path of the bad entry', () => {
    expect(refused({ PAYOUT_FEES: '{"*": {"*": {"bps": 50}' })).toMatch(/PAYOUT_FEES: Must be valid JSON/);
    expect(refused({ PAYOUT_FEES: '{"wire": {"USD": {"bps": "50"}}}' })).toMatch(/PAYOUT_FEES\.wire\.USD\.bps:/);
    expect(refused({ PAYOUT_FEES: '{"wire": {"USD": {"bsp": 50}}}' })).toMatch(/PAYOUT_FEES\.wire\.USD:.*bsp/);
    expect(refused({ PAYOUT_LIMITS: '{"*": {"USD": "ten thousand"}}' })).toMatch(/PAYOUT_LIMITS\.\*\.USD:.*decimal amount/);
    expect(refused({ KYC_LIMITS: '{"basic": {"USD": {"per_transaction": "500"}}}' })).toMatch(/KYC_LIMITS\.basic\.USD\.daily:/);
    expect(refused({ KYC_LIMITS: '[1, 2]' })).toMatch(/KYC_LIMITS:/);
    expect(refused({ KYC_MIN_AGE_BY_COUNTRY: 'US:21,GB18' })).toMatch(/KYC_MIN_AGE_BY_COUNTRY: Must be CC:AGE pairs/);
    // Several mistakes at once are all listed.
    const both = refused({ PAYOUT_FEES: 'nope', PAYOUT_LIMITS: '{"*": {"USD": -1}}' });
    expect(both).toContain('PAYOUT_FEES');
    expect(both).toContain('PAYOUT_LIMITS');
  });
});

describe('business settings', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('are checked on write: unknown keys and bad values are refused, nothing is stored', async () => {
    const biz = await t.tenant('Settings Ltd');
    await expect(setSettings(t.db, biz.tenant_id, { fess: { internal_transfer: { '*': { bps: 10 } } } })).rejects.toThrow(
      /Unrecognized key.*fess/,
    );
    await expect(setSettings(t.db, biz.tenant_id, { fees: { internal_transfer: { NGN: { bps: 10.5 } } } })).rejects.toThrow(
      InvalidSettings,
    );
    await expect(setSettings(t.db, biz.tenant_id, { fx_spread_bps: 9000 })).rejects.toThrow(/fx_spread_bps/);
    await expect(setSettings(t.db, biz.tenant_id, { home_currencies: ['usd'] })).rejects.toThrow(/home_currencies\.0/);
    expect(await settingsOf(t.db, biz.tenant_id)).toEqual({});

    await setSettings(t.db, biz.tenant_id, { fees: { internal_transfer: { NGN: { flat: '10.00', bps: 50 } } }, fx_spread_bps: 0 });
    await setSettings(t.db, biz.tenant_id, { rate_limit_per_minute: 100 });
    const settings = await settingsOf(t.db, biz.tenant_id);
    expect(settings.fees?.internal_transfer?.NGN?.bps).toBe(50);
    expect(settings.fx_spread_bps).toBe(0);
    expect(settings.rate_limit_per_minute).toBe(100);
  });

  it('are parsed with the API key: the request context holds typed settings', async () => {
    const biz = await t.tenant('Typed Ltd');
    await setSettings(t.db, biz.tenant_id, { payout_limits: { '*': { NGN: '150.00' } }, request_log_retention_days: 14 });
    const found = await lookupKey(t.db, biz.sandbox.secret_key);
    expect(found.ok).toBe(true);
    if (!found.ok) return;
    expect(found.settings.payout_limits?.['*']?.NGN).toBe('150.00');
    expect(found.settings.request_log_retention_days).toBe(14);
  });

  it('stored around the checks (a hand-edited row) fail loudly, naming the business and the key but not the value', () => {
    expect(() => parseBusinessSettings({ fees: { internal_transfer: { NGN: { bps: 'lots' } } } }, 'biz_1')).toThrow(
      /invalid business settings of business biz_1: fees\.internal_transfer\.NGN\.bps/,
    );
    expect(() => parseBusinessSettings({ fees: { internal_transfer: { NGN: { bps: 'lots' } } } }, 'biz_1')).toThrow(InvalidStoredSettings);
    expect(() => parseBusinessSettings({ fees: { internal_transfer: { NGN: { bps: 'lots' } } } }, 'biz_1')).not.toThrow(/lots/);
    // Keys this version does not know are ignored when reading (they are refused on write).
    expect(parseBusinessSettings({ legacy_key: true, fx_fee_bps: 10 }, 'biz_1')).toEqual({ fx_fee_bps: 10 });
    // The approvals setting is kept as it is (its module checks its shape).
    const approvals = { fx_orders: true, payouts_above: { USD: '1000.00' }, live: { fx_orders: false } };
    expect(parseBusinessSettings({ approvals }, 'biz_1').approvals).toEqual(approvals);
  });

  it('stored around the checks: a request gets the 500 envelope, the log names the business and the bad path', async () => {
    const lines: string[] = [];
    const app = await startTestApp({}, { logger: { level: 'error', stream: { write: (line: string) => lines.push(line) } } });
    try {
      const biz = await app.tenant('Hand Edited Ltd');
      const broken = { fees: { internal_transfer: { NGN: { bps: 'lots' } } }, fx_fee_bps: 10 };
      await app.db
        .updateTable('tenants')
        .set({ settings: JSON.stringify(broken) })
        .where('id', '=', biz.tenant_id)
        .execute();

      const res = await clientFor(app, biz.sandbox.secret_key).get('/v1/accounts');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        data: null,
        error: {
          code: 'internal_error',
          message: 'Something went wrong on our side',
          request_id: res.headers['x-request-id'],
          details: [],
        },
      });
      expect(res.text).not.toContain('fees');

      const logged = lines.map((line) => JSON.parse(line)).filter((entry) => entry.level >= 50);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatchObject({
        tenant_id: biz.tenant_id,
        settings_paths: ['fees.internal_transfer.NGN.bps'],
        request_id: res.headers['x-request-id'],
      });
      expect(logged[0].msg).toContain(`invalid business settings of business ${biz.tenant_id}: fees.internal_transfer.NGN.bps:`);
      expect(lines.join('\n')).not.toContain('lots');
    } finally {
      await app.close();
    }
  });
});
