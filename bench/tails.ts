import { startFloorServer } from './floor.js';
import { pgbenchLatenciesAtRate, pgbenchLatency, type PgbenchLatency } from './pgbench.js';
import { resumed, type Server } from './server.js';
import { steadyResult, steadyTransfers, type SteadyResult, type SteadySamples } from './steady.js';

/** Our p99 at a rate, PostgreSQL's own (pgbench) and the floor's (bench/floor.ts), taken in turns. */
export interface Tails {
  ours: SteadyResult;
  pgbench: PgbenchLatency;
  floor: SteadyResult;
  rounds: number;
}

/**
 * Our server, pgbench's TPC-B and the floor at one rate, in turns: `rounds` rounds, each our
 * server for `slice` seconds, then (ours paused) pgbench, then the floor for as long, each one's
 * latencies pooled over its rounds.
 *
 * The disk of these machines stalls now and then, for tens to hundreds of milliseconds, and any
 * transaction that commits meanwhile waits for it. A p99 over a few seconds at 100/s is then
 * mostly whether such a stall fell in its window: three windows one after another compared three
 * moments of the disk as much as three servers. In turns, the three meet the same stretch of it.
 */
export async function tailsInTurns(o: {
  server: Server;
  /** Our load at the rate for `seconds` (bench/steady.ts). */
  ours: (seconds: number) => Promise<SteadyResult>;
  /** A database `pgbench -i -s scale` initialized. */
  pgbenchUrl: string;
  scale: number;
  rate: number;
  rounds: number;
  slice: number;
  log: (line: string) => void;
}): Promise<Tails> {
  const floor = await startFloorServer(o.pgbenchUrl, o.scale);
  const floorAt = (seconds: number) => steadyTransfers({ base: floor.base, key: 'floor', seconds, rate: o.rate }, () => ['a', 'b']);
  const ours: SteadySamples[] = [];
  const pgbench: number[] = [];
  const floors: SteadySamples[] = [];
  let command = '';
  try {
    o.server.pause();
    await floorAt(Math.min(2, o.slice)); // its first requests meet a cold process, as ours did in their warm-up
    for (let round = 1; round <= o.rounds; round++) {
      await resumed(o.server);
      // Not counted: the server's first requests after it was stopped (bench/server.ts `resumed`).
      await o.ours(Math.min(1, o.slice));
      ours.push((await o.ours(o.slice)).samples);
      o.server.pause();
      const run = pgbenchLatenciesAtRate(o.pgbenchUrl, o.slice, o.rate);
      pgbench.push(...run.latencies);
      command = run.command;
      floors.push((await floorAt(o.slice)).samples);
      const slowest = (latencies: number[]) => `${latencies.reduce((a, b) => Math.max(a, b), 0).toFixed(1)} ms`;
      o.log(
        `tails in turns, round ${round} of ${o.rounds}, the slowest request: ours ${slowest(ours.at(-1)!.latencies)}, ` +
          `pgbench ${slowest(run.latencies)}, the floor ${slowest(floors.at(-1)!.latencies)}`,
      );
    }
  } finally {
    floor.stop();
    await resumed(o.server);
  }
  return {
    ours: steadyResult(ours),
    pgbench: pgbenchLatency({ latencies: pgbench, command }),
    floor: steadyResult(floors),
    rounds: o.rounds,
  };
}
