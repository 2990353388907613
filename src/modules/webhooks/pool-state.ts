import { performance } from 'node:perf_hooks';
import type * as queue from './queue-repo.js';

type Claimed = queue.ClaimedDelivery;

/** The delivery pool's bookkeeping (delivery.ts, deliveryPool): load per endpoint, and the tick's wait for a free slot. */

/** Per endpoint: start times of this pool's requests in flight, and how many answered ones wait to be recorded. */
export class EndpointLoad {
  private readonly perEndpoint = new Map<string, EndpointRequests>();

  start(w: Claimed): EndpointRequests {
    const local = this.perEndpoint.get(w.endpoint_id) ?? { started: new Map<string, number>(), answered: 0 };
    local.started.set(w.id, performance.now());
    this.perEndpoint.set(w.endpoint_id, local);
    return local;
  }

  answer(w: Claimed, local: EndpointRequests): void {
    local.started.delete(w.id);
    local.answered++;
  }

  end(w: Claimed, local: EndpointRequests, answered: boolean): void {
    local.started.delete(w.id);
    if (answered) local.answered--;
    if (local.started.size === 0 && local.answered === 0 && this.perEndpoint.get(w.endpoint_id) === local)
      this.perEndpoint.delete(w.endpoint_id);
  }

  /** What the claim counts against each endpoint's limit: all requests, the fast ones, the answered ones. */
  snapshot(slowMs: number): Map<string, queue.LocalInFlight> {
    const now = performance.now();
    const out = new Map<string, queue.LocalInFlight>();
    for (const [endpoint, { started, answered }] of this.perEndpoint) {
      let fast = 0;
      for (const at of started.values()) if (now - at < slowMs) fast++;
      out.set(endpoint, { all: started.size, fast, answered });
    }
    return out;
  }
}

type EndpointRequests = { started: Map<string, number>; answered: number };

/** The tick waiting for a request to end (and free its slot), or for `ms`, whichever comes first. */
export class SlotSignal {
  private waiting: (() => void) | undefined;
  /** Requests ended so far. */
  ended = 0;

  /** A request ended: the tick waiting for a free slot goes on. */
  end(): void {
    this.ended++;
    this.waiting?.();
  }

  freedOr(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiting = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiting = done;
    });
  }
}
