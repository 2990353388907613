import { describe, expect, it } from 'vitest';
import { InvalidStoredSettings } from '../../core/settings.js';
import { expiryOf, parsePolicy, payoutNeedsApproval, policyOf, validateSetting } from './service.js';

describe('approval policy', () => {
  it('is off by default', () => {
    const p = parsePolicy(undefined, 'sandbox');
    expect(p).toMatchObject({ fxOrders: false, newPayees: false, expireAfterHours: 24 });
    expect(payoutNeedsApproval(p, 'USD', 10n ** 12n)).toBe(false);
  });

  it('applies the per-environment override over the shared setting', () => {
    const raw = { fx_orders: true, payouts_above: { USD: '1000.00' }, live: { fx_orders: false, payouts_above: { NGN: 0 } } };
    const sandbox = parsePolicy(raw, 'sandbox');
    const live = parsePolicy(raw, 'live');
    expect(sandbox.fxOrders).toBe(true);
    expect(live.fxOrders).toBe(false);
    expect(payoutNeedsApproval(sandbox, 'USD', 100_000n)).toBe(false); // at the threshold: no
    expect(payoutNeedsApproval(sandbox, 'USD', 100_001n)).toBe(true);
    expect(payoutNeedsApproval(sandbox, 'NGN', 1n)).toBe(false);
    expect(payoutNeedsApproval(live, 'NGN', 1n)).toBe(true); // "0": every payout
    expect(payoutNeedsApproval(live, 'USD', 10n ** 9n)).toBe(false); // the override replaced the map
  });

  it('refuses malformed settings instead of switching approvals off', () => {
    for (const bad of [
      { fx_orders: 'yes' },
      { payouts_above: { USD: '1.001' } },
      { payouts_above: { XXX: '1' } },
      { typo: true },
      { expire_after_hours: 0 },
    ]) {
      expect(() => parsePolicy(bad, 'sandbox'), JSON.stringify(bad)).toThrow();
      expect(() => validateSetting(bad), JSON.stringify(bad)).toThrow();
    }
    expect(validateSetting({ new_payees: true, sandbox: { expire_after_hours: 2 } })).toEqual({
      new_payees: true,
      sandbox: { expire_after_hours: 2 },
    });
  });

  it('stored around the checks, is the business setting to fix (named), not a client mistake', () => {
    for (const bad of [{ fx_orders: 'yes' }, { payouts_above: { USD: '1.001' } }, { payouts_above: { XXX: '1' } }]) {
      const ctx = { tenantId: 'biz_1', environment: 'sandbox' as const, settings: { approvals: bad } };
      let thrown: unknown;
      try {
        policyOf(ctx);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(bad)).toBeInstanceOf(InvalidStoredSettings);
      expect((thrown as InvalidStoredSettings).tenantId).toBe('biz_1');
      expect((thrown as Error).message).toMatch(/business biz_1: approvals/);
    }
  });

  it('expires after the policy hours, or earlier when the item demands it (a quote)', () => {
    const p = parsePolicy({ expire_after_hours: 2 }, 'sandbox');
    const now = Date.UTC(2026, 0, 1);
    expect(expiryOf(p, null, now).getTime()).toBe(now + 2 * 3_600_000);
    expect(expiryOf(p, new Date(now + 30_000), now).getTime()).toBe(now + 30_000);
    expect(expiryOf(p, new Date(now + 5 * 3_600_000), now).getTime()).toBe(now + 2 * 3_600_000);
  });
});
