import { describe, expect, it } from 'vitest';
import { historyInTurns } from '../../bench/history.js';
import type { LoadResult } from '../../bench/load.js';

/**
 * The 1,000,000-entry figure taken in turns (bench/history.ts): the empty ledger's server and the
 * seeded one's alternate which goes first, and each side's rate is over all its turns together.
 */
describe('the history figure in turns', () => {
  it("alternates which ledger goes first and pools each side's transfers over its time", async () => {
    const order: string[] = [];
    // The machine slows down turn by turn: a side that always went second would always look slower.
    let speed = 3000;
    const load = async (side: 'empty' | 'full', seconds: number): Promise<LoadResult> => {
      order.push(side);
      speed -= 100;
      const perSecond = side === 'full' ? speed * 0.9 : speed;
      return {
        ok: perSecond * seconds,
        failed: side === 'full' ? 1 : 0,
        failures: side === 'full' ? 'errorsx1' : '',
        perSecond,
        p50: 5,
        p99: side === 'full' ? 30 + order.length : 20,
      };
    };
    const turns = await historyInTurns(load, { empty: 'empty', full: 'full' }, 10, () => {});
    expect(order).toEqual(['empty', 'full', 'full', 'empty', 'empty', 'full', 'full', 'empty', 'empty', 'full', 'full', 'empty']);
    // Speeds 2900..1800: the empty side had 2900, 2600, 2500, 2200, 2100, 1800; the full side 0.9 × 2800, 2700, 2400, 2300, 2000, 1900.
    expect(turns.rounds).toBe(6);
    expect(turns.empty.perSecond).toBeCloseTo(14100 / 6);
    expect(turns.full.perSecond).toBeCloseTo((0.9 * 14100) / 6);
    expect(turns.full.perSecond / turns.empty.perSecond).toBeCloseTo(0.9);
    expect(turns.full.ok).toBeCloseTo(0.9 * 14100 * 3);
    expect(turns.full.failed).toBe(6);
    expect(turns.full.p99).toBe(41);
    expect(turns.empty.p99).toBe(20);
  });
});
