import { describe, expect, it } from 'vitest';
import { concurrencyGate } from './gate.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('concurrencyGate', () => {
  it('runs at most `limit` at once, the rest in arrival order', async () => {
    const gate = concurrencyGate(2);
    let running = 0;
    let most = 0;
    const order: number[] = [];
    const work = (i: number) => async () => {
      running++;
      most = Math.max(most, running);
      order.push(i);
      await tick();
      running--;
      return i;
    };
    const results = await Promise.all([1, 2, 3, 4, 5].map((i) => gate(work(i))));
    expect(results).toEqual([1, 2, 3, 4, 5]);
    expect(most).toBe(2);
    expect(order).toEqual([1, 2, 3, 4, 5]);
  });

  it('frees the slot when the work throws', async () => {
    const gate = concurrencyGate(1);
    await expect(
      gate(async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const waited = gate(async () => 'after');
    await expect(Promise.race([waited, tick().then(() => 'stuck')])).resolves.toBe('after');
  });
});
