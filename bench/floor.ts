import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './server.js';

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
