import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { LoadResult } from './load.js';
import { freePort } from './server.js';
import { steadyTransfers } from './steady.js';

/**
 * bench/floor-server.ts on a database pgbench initialized at `scale`, in a process of its own
 * (as our server is), until `stop`.
 */
export async function startFloorServer(url: string, scale: number): Promise<{ base: string; stop(): void }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'floor-server.ts')], {
    env: { ...process.env, FLOOR_DATABASE_URL: url, FLOOR_SCALE: String(scale), PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the floor server exited with ${code}`)));
    child.stdout.once('data', () => resolve());
  });
  child.removeAllListeners('exit');
  return { base: `http://127.0.0.1:${port}`, stop: () => child.kill() };
}

/**
 * The floor server at a fixed rate, offered by the same load generator and the same request bytes
 * as our steady runs (a transfer's POST, which it parses and ignores): the tail an HTTP hop and
 * Node.js add to pgbench's own transaction.
 */
export async function floorAtRate(url: string, scale: number, seconds: number, rate: number): Promise<LoadResult> {
  const floor = await startFloorServer(url, scale);
  try {
    const pick = (): [string, string] => ['floor-a', 'floor-b'];
    await steadyTransfers({ base: floor.base, key: 'floor', seconds: Math.min(2, seconds), rate }, pick);
    return await steadyTransfers({ base: floor.base, key: 'floor', seconds, rate }, pick);
  } finally {
    floor.stop();
  }
}
