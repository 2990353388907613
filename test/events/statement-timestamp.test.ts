import { Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { recordEvents } from '../../src/modules/webhooks/outbox.js';
import { startTestApp, type TestApp } from '../harness.js';

/**
 * The clock as the outbox reads it, made to move by one millisecond at each reading while
 * `ticking`: events recorded together would otherwise fall in one millisecond or not by chance.
 */
const clock = vi.hoisted(() => ({ ticking: false, at: Date.parse('2026-12-05T10:00:00.000Z') }));
vi.mock('../../src/core/clock.js', async (actual) => ({
  ...(await actual<typeof import('../../src/core/clock.js')>()),
  clockTime: () => new Date(clock.ticking ? (clock.at += 1) : clock.at),
}));

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

describe('the events written in one statement (a batch of money movements)', () => {
  it('carry one timestamp, so the statement keeps one text whether the clock moved between them or not', async () => {
    const tenant = await t.tenant('One Stamp Ltd');
    const ctx = { tenantId: tenant.tenant_id, environment: 'sandbox' as const };
    const batch = () =>
      ['a', 'b', 'c'].map((label) => ({ ctx, eventType: 'transfer.status.completed' as const, data: { id: `transfer-${label}` } }));

    clock.ticking = false;
    const still = await recordEvents(t.db, batch());
    const inserts = vi.spyOn(Kysely.prototype, 'insertInto');
    let moving: Awaited<ReturnType<typeof recordEvents>>;
    try {
      clock.ticking = true;
      moving = await recordEvents(t.db, batch());
      expect(new Set(still.map((e) => e.timestamp)).size).toBe(1);
      expect(new Set(moving.map((e) => e.timestamp)).size).toBe(1);
      // The second batch's statement is the first one's text with its own values: nothing built.
      expect(inserts).not.toHaveBeenCalled();
    } finally {
      inserts.mockRestore();
    }
    const stored = await t.db
      .selectFrom('events')
      .select('occurred_at')
      .where('tenant_id', '=', tenant.tenant_id)
      .where('event_group_id', 'like', 'transfer-%')
      .execute();
    expect(stored.map((r) => r.occurred_at!.toISOString()).sort()).toEqual([...still, ...moving].map((e) => e.timestamp).sort());
  });
});
