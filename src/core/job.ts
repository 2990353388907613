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
