import { afterEach, describe, expect, it, vi } from 'vitest';
import { Batcher, type BatcherOptions } from './batcher.js';
import { metricsRegistry } from '../lib/metrics.js';

/** A promise and its resolver, for a batch held open by the test. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A batcher (ten items a batch, one lane unless told) whose every batch waits for the test to end it, in order. */
function heldBatcher<I>(options: Omit<BatcherOptions<I>, 'maxBatch' | 'lanes' | 'fail'> & { lanes?: number } = {}) {
  const started: I[][] = [];
  const gates: ReturnType<typeof gate>[] = [];
  const batcher = new Batcher<I>(
    async (batch) => {
      started.push(batch);
      const g = gate();
      gates.push(g);
      await g.opened;
    },
    { maxBatch: 10, lanes: 1, ...options, fail: () => {} },
  );
  return { batcher, started, end: (i: number) => gates[i]!.open() };
}

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

  it('takes items in arrival order, keyless ones up to maxBatch at once, a key already in the batch left for the next', async () => {
    const started: string[][] = [];
    const batcher = new Batcher<string>(
      async (batch) => {
        started.push(batch);
      },
      { maxBatch: 3, lanes: 1, fail: () => {} },
    );
    ['r1', 'r2', 'r3', 'r4'].forEach((n) => batcher.submit(n));
    for (let i = 0; i < 5; i++) await turn();
    expect(started).toEqual([['r1', 'r2', 'r3'], ['r4']]);

    started.length = 0;
    batcher.submit('r5');
    batcher.submit('a1', 'a');
    batcher.submit('a2', 'a');
    batcher.submit('r6');
    batcher.submit('b1', 'b');
    for (let i = 0; i < 5; i++) await turn();
    expect(started).toEqual([
      ['r5', 'a1', 'r6'],
      ['a2', 'b1'],
    ]);
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

  describe('what running batches touch', () => {
    /** Two lanes; an item touches its letters ('ab': a and b). */
    const lettered = () => heldBatcher<string>({ lanes: 2, touches: (item) => [...item] });

    // The fault: a batch started beside a stalled one took the queue in arrival order, so it
    // waited on the first row the stalled one held, with its own rows held, and every batch after
    // it queued behind both (bench/stall.ts).
    it('a batch started beside a running one leaves out the items touching what it holds, and those behind them on the same rows', async () => {
      const { batcher, started, end } = lettered();
      batcher.submit('ab');
      await turn();
      // bc touches b (held); cf touches c, which bc (left out) touches: it stays behind bc.
      ['bc', 'de', 'cf', 'gh'].forEach((item) => batcher.submit(item));
      await turn();
      expect(started).toEqual([['ab'], ['de', 'gh']]);
      end(0);
      await turn();
      await turn();
      expect(started).toEqual([['ab'], ['de', 'gh'], ['bc', 'cf']]);
    });

    it("with every queued item on a running batch's rows, waits for that batch to end", async () => {
      const { batcher, started, end } = lettered();
      batcher.submit('ab');
      await turn();
      batcher.submit('ba');
      await turn();
      expect(started).toEqual([['ab']]); // a lane is free, but nothing queued may use it yet
      end(0);
      await turn();
      await turn();
      expect(started).toEqual([['ab'], ['ba']]);
    });
  });

  describe('spare lanes beside a stalled batch', () => {
    // Fake clocks for the stall timer and performance.now(); setImmediate stays real (turn()).
    const clock = () => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    afterEach(() => {
      vi.useRealTimers();
    });

    const held = (spare?: { lanes: number; stallMs: number }, name?: string) =>
      heldBatcher<number>({ ...(spare ? { spare } : {}), ...(name ? { name } : {}) });

    // The fault: with one lane, a batch whose commit stalls holds every request queued behind
    // it until it ends, though their commits could have joined its WAL flush.
    it('one lane and no spare: a stalled batch holds every request behind it', async () => {
      clock();
      const { batcher, started } = held();
      batcher.submit(1);
      await turn();
      batcher.submit(2);
      await turn();
      vi.advanceTimersByTime(1_000);
      await turn();
      expect(started).toEqual([[1]]);
    });

    it('a batch running past stallMs lets the queue start beside it, one spare lane at a time', async () => {
      clock();
      const { batcher, started, end } = held({ lanes: 1, stallMs: 20 });
      batcher.submit(1);
      await turn();
      batcher.submit(2);
      await turn();
      vi.advanceTimersByTime(19);
      await turn();
      expect(started).toEqual([[1]]);
      vi.advanceTimersByTime(1);
      await turn();
      expect(started).toEqual([[1], [2]]);
      // Both stalled now, but the one spare lane is taken: 3 waits for a batch to end.
      batcher.submit(3);
      vi.advanceTimersByTime(1_000);
      await turn();
      expect(started).toEqual([[1], [2]]);
      end(0);
      await turn();
      await turn();
      expect(started).toEqual([[1], [2], [3]]);
    });

    it('opens no spare lane for a batch that takes as long as batches did lately', async () => {
      clock();
      const { batcher, started, end } = held({ lanes: 1, stallMs: 5 });
      for (let i = 0; i < 30; i++) {
        batcher.submit(i);
        await turn();
        vi.advanceTimersByTime(40);
        end(i);
        await turn();
        await turn();
      }
      // Batches took 40 ms each: a batch counts as stalled after about three times that (the
      // average has come within 2 ms of 40 after 30 batches).
      batcher.submit(30);
      await turn();
      batcher.submit(31);
      await turn();
      vi.advanceTimersByTime(100);
      await turn();
      expect(started.slice(30)).toEqual([[30]]);
      vi.advanceTimersByTime(30);
      await turn();
      expect(started.slice(30)).toEqual([[30], [31]]);
    });

    /** One series of a batcher metric for one batch name: `count`, `sum` (seconds or starts). */
    async function series(metric: string, batch: string) {
      const got = await metricsRegistry.getSingleMetric(metric)!.get();
      const of = (suffix: string) =>
        got.values.find((v) => v.labels.batch === batch && ((v as { metricName?: string }).metricName ?? metric) === `${metric}${suffix}`)
          ?.value ?? 0;
      return { count: metric.endsWith('_total') ? of('') : of('_count'), sum: of('_sum') };
    }

    // What the bench's pauses row reads to tell a queue from a slow batch: how long each batch's
    // oldest request waited for a lane, how long each batch held its lane, spare-lane starts.
    it('records the oldest wait and the lane time of each batch, and the batches started on a spare lane', async () => {
      clock();
      const { batcher, started, end } = held({ lanes: 1, stallMs: 20 }, 'metrics-test');
      batcher.submit(1);
      await turn();
      vi.advanceTimersByTime(5);
      batcher.submit(2); // waits behind batch [1]: a spare lane opens 15 ms later
      await turn();
      vi.advanceTimersByTime(15);
      await turn();
      expect(started).toEqual([[1], [2]]);
      end(0);
      end(1);
      await turn();
      await turn();
      const wait = await series('fsapi_batch_wait_seconds', 'metrics-test');
      const lane = await series('fsapi_batch_lane_seconds', 'metrics-test');
      const spare = await series('fsapi_batch_spare_lane_starts_total', 'metrics-test');
      expect(wait.count).toBe(2);
      expect(wait.sum).toBeCloseTo(0.015, 6); // batch [1] started on submit's turn; [2] waited 15 ms
      expect(lane.count).toBe(2);
      expect(lane.sum).toBeCloseTo(0.02, 6); // [1] held its lane 20 ms, [2] none of the fake clock's time
      expect(spare.count).toBe(1);
    });
  });
});
