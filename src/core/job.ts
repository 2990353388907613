/**
 * A background loop: `tick` does one bounded batch of work and says whether more is waiting (run
 * again at once) or not (wait `intervalMs`). Modules define their jobs; workers/ runs them.
 */
export interface Job {
  name: string;
  intervalMs: number;
  tick: () => Promise<boolean>;
  /** Ends work a tick started and left running (the webhook pool's requests); awaited on stop. */
  stop?: () => Promise<void>;
}

/**
 * Runs `run` for each item in turn, each in its own unit of work (a batch that failed, retried
 * item by item): one item's failure does not stop the ones after it, and the first failure is
 * thrown once every item ran (the worker logs it).
 */
export async function eachOnItsOwn<T>(items: readonly T[], run: (item: T) => Promise<unknown>): Promise<void> {
  const failures: unknown[] = [];
  for (const item of items) await run(item).catch((err: unknown) => failures.push(err));
  if (failures.length > 0) throw failures[0];
}
