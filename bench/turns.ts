import type { LoadResult } from './load.js';

/** Rounds of a figure taken in turns. */
export const TURN_ROUNDS = 6;

/**
 * Two servers' loads in turns: in each of TURN_ROUNDS rounds each side runs `load` for a slice of
 * 3 s (`seconds` if less), which one goes first alternating, so that a machine whose speed drifts
 * drifts over both alike (one run of each after the other moved a ratio between 0.79× and 1.38× on
 * one machine: docs/benchmarks.md). Each side's rate is over all its turns; its p99 is the highest
 * of its turns'. `onRound` hears each round's two results.
 */
export async function loadsInTurns<App, S extends string>(
  load: (app: App, seconds: number) => Promise<LoadResult>,
  apps: Record<S, App>,
  sides: readonly [S, S],
  seconds: number,
  onRound: (round: number, last: Record<S, LoadResult>) => void,
): Promise<{ rounds: number } & Record<S, LoadResult>> {
  const slice = Math.min(3, seconds);
  const runs = { [sides[0]]: [], [sides[1]]: [] } as unknown as Record<S, LoadResult[]>;
  for (let round = 1; round <= TURN_ROUNDS; round++) {
    const order = round % 2 === 1 ? sides : ([sides[1], sides[0]] as const);
    for (const side of order) runs[side].push(await load(apps[side], slice));
    onRound(round, { [sides[0]]: runs[sides[0]].at(-1)!, [sides[1]]: runs[sides[1]].at(-1)! } as Record<S, LoadResult>);
  }
  return { rounds: TURN_ROUNDS, [sides[0]]: pooled(runs[sides[0]]), [sides[1]]: pooled(runs[sides[1]]) } as { rounds: number } & Record<
    S,
    LoadResult
  >;
}

/** Loads taken in turns as one: requests a second over their time together, the highest p50 and p99. */
function pooled(runs: LoadResult[]): LoadResult {
  const ok = runs.reduce((n, r) => n + r.ok, 0);
  const seconds = runs.reduce((t, r) => t + (r.perSecond > 0 ? r.ok / r.perSecond : 0), 0);
  return {
    ok,
    failed: runs.reduce((n, r) => n + r.failed, 0),
    failures: runs
      .map((r) => r.failures)
      .filter(Boolean)
      .join('; '),
    perSecond: seconds > 0 ? ok / seconds : 0,
    p50: Math.max(...runs.map((r) => r.p50)),
    p99: Math.max(...runs.map((r) => r.p99)),
  };
}
