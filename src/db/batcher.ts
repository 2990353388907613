import { observeBatchLane, observeBatchStart } from '../lib/metrics.js';

export interface BatcherOptions<I> {
  /** Items per batch. */
  maxBatch: number;
  /** Batches in flight at once (1 on PGlite: it has one connection). */
  lanes: number;
  /**
   * Lanes that open only beside a stalled batch: one still running after `stallMs` and after
   * three times as long as batches took lately. A commit held up by the disk (or a batch waiting
   * on a row another transaction holds) then no longer holds up every request queued behind it:
   * the next batch starts, and its commit joins the stalled one's WAL flush instead of waiting
   * for it to end. Under an even load, slow or fast, batches take about as long as their
   * predecessors and no spare lane opens (more lanes split the queue into smaller batches).
   */
  spare?: { lanes: number; stallMs: number };
  /**
   * What an item's batch will lock (a transfer's accounts). A batch that starts while others run
   * (a spare lane, or the base lane beside a spare one) takes no item touching what they touch:
   * it would wait for their commit on the first lock they share, holding its own, and every
   * batch after it would queue behind that, each commit waiting for the one before instead of
   * joining its WAL flush. An item left for later also keeps back the items behind it that touch
   * what it touches, so requests on one account still run in arrival order. Only a hint: the
   * database's locks still decide, and without it (reads) batches take items in arrival order.
   */
  touches?: (item: I) => readonly string[];
  /** The batch-size metric's label (default `transfers`). */
  name?: string;
  /**
   * Settles each item of a batch whose `run` threw (its own bug, or an item it could not read):
   * those items fail, and nothing else does; the error never leaves the batcher.
   */
  fail: (batch: I[], err: unknown) => void;
}

interface Queued<I> {
  item: I;
  /** Absent: the item may share a batch with any other (reads). */
  key: string | undefined;
  /** What its batch will lock (BatcherOptions.touches). */
  touches: readonly string[];
  /** When it was submitted (performance.now()): its batch's metrics say how long it waited. */
  at: number;
}

/**
 * Gathers concurrent items into batches, without a timer: with every lane busy, new items queue,
 * and the next free lane takes up to `maxBatch` of them; at low load an item runs alone on the
 * event loop's next turn, so a quiet system pays no added latency. An item whose `key` is already
 * in the forming batch waits for a later one (a multi-row `ON CONFLICT DO UPDATE` cannot touch one
 * row twice, and the second request must see the first one's outcome). Settling each item is
 * `run`'s job.
 */
export class Batcher<I> {
  private readonly queue: Queued<I>[] = [];
  private running = 0;
  private scheduled = false;
  /** When each batch holding a lane started (performance.now()), for the spare lanes. */
  private readonly startedAt = new Set<{ at: number }>();
  /** How long batches took lately (a moving average, ms; from a third of `stallMs`, so one slow batch moves it little). */
  private typicalMs: number;
  private stallTimer: NodeJS.Timeout | null = null;
  /** What the running batches touch (BatcherOptions.touches), counted once per item that touches it. */
  private readonly held = new Map<string, number>();

  constructor(
    /**
     * Runs a batch. It may call `release` once its batch no longer needs the lane (committed, its
     * outcomes known, not yet answered): the next batch starts while this one answers its
     * requests. The lane is released when `run` ends in any case.
     */
    private readonly run: (batch: I[], release: () => void) => Promise<void>,
    private readonly options: BatcherOptions<I>,
  ) {
    this.typicalMs = (options.spare?.stallMs ?? 0) / 3;
  }

  submit(item: I, key?: string): void {
    this.queue.push({ item, key, touches: this.options.touches?.(item) ?? [], at: performance.now() });
    this.schedule();
  }

  /**
   * Starts batches on the event loop's next turn (setImmediate, not a timer): every request whose
   * bytes arrived in this turn submits first. Started at once, a batch would take only the first
   * of them, and on PGlite, whose statements run synchronously in this thread, the next ones
   * could not even be parsed before it ended: every batch there was one request.
   */
  private schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.kick();
    });
  }

  private kick() {
    while (this.running < this.lanesOpen() && this.queue.length > 0) {
      const taken = this.take();
      // Every queued item touches what a running batch touches: it waits for one to end.
      if (taken.length === 0) break;
      const batch = taken.map((q) => q.item);
      this.hold(taken, 1);
      const now = performance.now();
      observeBatchStart(batch.length, now - taken[0]!.at, this.running >= this.options.lanes, this.options.name);
      this.running++;
      const started = { at: now };
      this.startedAt.add(started);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.running--;
        this.hold(taken, -1);
        this.startedAt.delete(started);
        const took = performance.now() - started.at;
        this.typicalMs = 0.9 * this.typicalMs + 0.1 * took;
        observeBatchLane(took, this.options.name);
        this.schedule();
      };
      let running: Promise<void>;
      try {
        running = this.run(batch, release);
      } catch (err) {
        running = Promise.reject(err);
      }
      running.catch((err: unknown) => this.failAll(batch, err)).finally(release);
    }
    if (this.queue.length > 0) this.watchForStall();
  }

  /** The base lanes, and a spare one beside each batch running longer than `stallAfter()`. */
  private lanesOpen(): number {
    const spare = this.options.spare;
    if (!spare) return this.options.lanes;
    const since = performance.now() - this.stallAfter();
    let stalled = 0;
    for (const s of this.startedAt) if (s.at <= since) stalled++;
    return this.options.lanes + Math.min(spare.lanes, stalled);
  }

  private stallAfter(): number {
    return Math.max(this.options.spare?.stallMs ?? Infinity, 3 * this.typicalMs);
  }

  /** With requests queued behind busy lanes: look again when the next batch would count as stalled. */
  private watchForStall() {
    const spare = this.options.spare;
    if (!spare || this.stallTimer || this.running >= this.options.lanes + spare.lanes) return;
    // The oldest batch not counted as stalled yet (those that are have opened their lane already).
    const after = this.stallAfter();
    const since = performance.now() - after;
    let next = Infinity;
    for (const s of this.startedAt) if (s.at > since) next = Math.min(next, s.at);
    if (next === Infinity) return;
    const wait = Math.max(1, next + after - performance.now());
    this.stallTimer = setTimeout(() => {
      this.stallTimer = null;
      this.kick();
    }, wait);
    this.stallTimer.unref();
  }

  private failAll(batch: I[], err: unknown) {
    try {
      this.options.fail(batch, err);
    } catch {
      // A settler that throws has nothing left to tell; the lane is released all the same.
    }
  }

  /**
   * Up to maxBatch queued items in arrival order, skipping keys already taken and, beside running
   * batches, items touching what they hold (and what an item skipped for that touches).
   */
  private take(): Queued<I>[] {
    const max = this.options.maxBatch;
    const blocked = this.held.size > 0 ? new Set(this.held.keys()) : undefined;
    // Items without a key (reads) share any batch: the first maxBatch go at once, with no key set.
    let keyless = 0;
    if (!blocked) while (keyless < this.queue.length && keyless < max && this.queue[keyless]!.key === undefined) keyless++;
    if (keyless === this.queue.length || keyless === max) return this.queue.splice(0, keyless);
    const keys = new Set<string>();
    const batch: Queued<I>[] = [];
    for (let i = 0; i < this.queue.length && batch.length < max; ) {
      const q = this.queue[i]!;
      if ((q.key !== undefined && keys.has(q.key)) || (blocked && q.touches.some((t) => blocked.has(t)))) {
        q.touches.forEach((t) => blocked?.add(t));
        i++;
        continue;
      }
      if (q.key !== undefined) keys.add(q.key);
      batch.push(q);
      this.queue.splice(i, 1);
    }
    return batch;
  }

  /** Counts what a batch's items touch in or out of `held` (+1 when it starts, -1 when it releases its lane). */
  private hold(items: Queued<I>[], by: 1 | -1) {
    for (const q of items)
      for (const t of q.touches) {
        const n = (this.held.get(t) ?? 0) + by;
        if (n === 0) this.held.delete(t);
        else this.held.set(t, n);
      }
  }
}
