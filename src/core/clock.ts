import { AsyncLocalStorage } from 'node:async_hooks';
import type { Scope } from './context.js';

/**
 * Whose due work a worker pass handles, and at what instant. Real time (the default) handles
 * every business environment not attached to a test clock, at the database's now(); a test
 * clock's pass handles only the sandbox environment attached to it, at the clock's time. So a
 * clock never moves what real time or another clock sees.
 */
export interface Timeline {
  /** The instant due work is judged at; null: the database's now(). */
  now: Date | null;
  /** The one environment handled; null: every environment not on a test clock. */
  scope: Scope | null;
}

export const REAL_TIME: Timeline = { now: null, scope: null };

/** A test clock's pass: its sandbox environment at its time. */
export const clockTimeline = (scope: Scope, now: Date): Timeline & { now: Date; scope: Scope } => ({ now, scope });

const stamped = new AsyncLocalStorage<Date>();

/**
 * Runs `work` with events stamped at `at` (a test clock's time) instead of the wall clock: the
 * worker code a clock runs is the real-time code, so the stamp travels with the call rather than
 * through every function between the worker and the outbox.
 */
export function stampedAt<T>(at: Date, work: () => Promise<T>): Promise<T> {
  return stamped.run(at, work);
}

/** Now, for what a change records (event timestamps, updated_at): a test clock's time during its pass, else the wall clock. */
export function clockTime(): Date {
  return stamped.getStore() ?? new Date();
}

/** The instant a timeline judges by, as milliseconds (the wall clock for real time). */
export const timelineMs = (t: Timeline): number => (t.now ?? new Date()).getTime();
