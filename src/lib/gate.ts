/**
 * At most `limit` of the calls run at once; the others wait their turn, in arrival order. For work
 * whose memory grows with how many run together (a bulk of 1,000 transfers holds its items, their
 * rows and its answer until it ends) and which would not finish sooner side by side.
 */
export function concurrencyGate(limit: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      // The slot passes straight to the next caller, or is freed.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
