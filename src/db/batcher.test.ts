import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

/** A promise and its resolver, for a batch held open by the test. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('Batcher', () => {
  it('gathers what queued in one turn into one batch, and queues the rest behind a busy lane', async () => {
    const started: number[][] = [];
    const first = gate();
    const batcher = new Batcher<number>(
      async (batch) => {
        started.push(batch);
        if (started.length === 1) await first.opened;
      },
      { maxBatch: 2, lanes: 1, fail: () => {} },
    );
    [1, 2, 3].forEach((n) => batcher.submit(n));
    await turn();
    expect(started).toEqual([[1, 2]]);
    batcher.submit(4);
    await turn();
    expect(started).toEqual([[1, 2]]); // the one lane is busy
    first.open();
    await turn();
    await turn();
    expect(started).toEqual([
      [1, 2],
      [3, 4],
    ]);
  });

  // The batch posting path releases its lane once its transaction committed, before it answers
  // its requests (http/idempotency-batch.ts): the next batch's first statements are then on
  // their way to PostgreSQL while this thread writes the responses. Before, the next batch
  // started only when the previous one's run had ended.
  it('starts the next batch when a running batch releases its lane, before that batch ends', async () => {
    const started: number[][] = [];
    const first = gate();
    const batcher = new Batcher<number>(
      async (batch, release) => {
        started.push(batch);
        if (started.length > 1) return;
        release();
        release(); // a second release (and the one when run ends) changes nothing
        await first.opened;
      },
      { maxBatch: 2, lanes: 1, fail: () => {} },
    );
    [1, 2, 3, 4, 5, 6].forEach((n) => batcher.submit(n));
    await turn();
    // The first batch is still running; the second started on the lane it released. Released
    // twice, the lane counted once: the third waits for the second to end.
    expect(started).toEqual([
      [1, 2],
      [3, 4],
    ]);
    await turn();
    expect(started).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    first.open();
    await turn();
    expect(started).toHaveLength(3);
  });

  it('never runs more batches at once than it has lanes, releases counted once each', async () => {
    let running = 0;
    let most = 0;
    const batcher = new Batcher<number>(
      async (_batch, release) => {
        running++;
        most = Math.max(most, running);
        await turn();
        running--;
        release();
        release();
        await turn();
      },
      { maxBatch: 1, lanes: 2, fail: () => {} },
    );
    const all = Array.from({ length: 20 }, (_, n) => n);
    all.forEach((n) => batcher.submit(n));
    for (let i = 0; i < 40; i++) await turn();
    expect(most).toBe(2);
    expect(running).toBe(0);
  });

  it('fails only the items of a batch whose run throws, and keeps serving the next ones', async () => {
    const failed: number[] = [];
    const ran: number[][] = [];
    const batcher = new Batcher<number>(
      (batch) => {
        if (batch.includes(1)) throw new TypeError('a bad item');
        ran.push(batch);
        return Promise.resolve();
      },
      { maxBatch: 1, lanes: 1, fail: (batch) => failed.push(...batch) },
    );
    const rejected = new Promise((resolve) => setImmediate(() => resolve(null)));
    batcher.submit(1);
    batcher.submit(2);
    await rejected;
    for (let i = 0; i < 5; i++) await turn();
    expect(failed).toEqual([1]);
    expect(ran).toEqual([[2]]);
  });

  it('fails the items of a batch whose run rejects', async () => {
    const failed: number[] = [];
    const batcher = new Batcher<number>(() => Promise.reject(new Error('down')), {
      maxBatch: 2,
      lanes: 1,
      fail: (batch) => failed.push(...batch),
    });
    batcher.submit(1);
    batcher.submit(2);
    for (let i = 0; i < 5; i++) await turn();
    expect(failed).toEqual([1, 2]);
  });
});
