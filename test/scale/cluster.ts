import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Proc {
  name: string;
  role: 'api' | 'worker';
  port: number;
  base: string;
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** A real `src/main.ts` process (through tsx, as `npm start` runs it). */
export async function startProcess(name: string, role: 'api' | 'worker', env: Record<string, string>): Promise<Proc> {
  const port = role === 'api' ? await freePort() : 0;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env, ROLE: role, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString('utf8'));
    if (output.length > 400) output.splice(0, output.length - 400);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc: Proc = {
    name,
    role,
    port,
    base: `http://127.0.0.1:${port}`,
    child,
    output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      // A generous grace on a loaded machine; a process still running then is killed (exit code null).
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  // Ready: the banner is printed after the workers started and the server listens.
  const deadline = Date.now() + 150_000; // four processes compiling at once on two shared cores
  while (!output.join('').includes('Financial Services API')) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output.join('')}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} did not start:\n${output.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return proc;
}
