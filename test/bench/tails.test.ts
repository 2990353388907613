import { describe, expect, it } from 'vitest';
import { pgbenchLatency } from '../../bench/pgbench.js';
import { steadyResult } from '../../bench/steady.js';

/**
 * The tails taken in turns (bench/tails.ts) pool each one's samples over its rounds: the p99 of
 * all of them, not an average of each round's p99, which would let one round's stall count for a
 * fifth of what it was.
 */
describe('tails pooled over turns', () => {
  const run = (latencies: number[], failures: [string, number][] = []) => ({
    latencies,
    sendLags: latencies.map(() => 0.5),
    failures: new Map(failures),
    seconds: 1,
  });

  it("takes the p50 and p99 of every round's latencies together, and sums their failures", () => {
    const quiet = Array.from({ length: 99 }, (_, i) => 1 + i / 100);
    const stalled = [...quiet.slice(0, 95), 200, 210, 220, 230];
    const pooled = steadyResult([
      run(quiet),
      run(stalled, [['503', 2]]),
      run(quiet, [
        ['503', 1],
        ['errors', 1],
      ]),
    ]);
    expect(pooled.ok).toBe(297);
    expect(pooled.perSecond).toBe(99);
    expect(pooled.failed).toBe(4);
    expect(pooled.failures).toBe('503x3 errorsx1');
    // Index floor(0.99 * 297) = 294 of the 297 sorted latencies: the stalled round's second slowest.
    expect(pooled.p99).toBe(210);
    expect(pooled.p50).toBe(1.5);
    expect(pooled.sendLagP99).toBe(0.5);
    // Each round alone: two of them would say 1.98 ms.
    expect(steadyResult([run(quiet)]).p99).toBe(2);
  });

  it("pools pgbench's latencies the same way", () => {
    const latencies = [60, ...Array.from({ length: 198 }, () => 1), 50];
    expect(pgbenchLatency({ latencies, command: 'pgbench' })).toEqual({ count: 200, p50: 1, p99: 50, command: 'pgbench' });
  });
});
