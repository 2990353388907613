import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { openPGlite, openPostgres, type DatabaseHandle } from '../src/db/client.js';
import { cloneTemplateDatabase } from './harness.js';

/**
 * The real server (`src/main.ts`) or operator CLI in a child process of its own: one `node`
 * process (tsx as a loader, no npx wrapper), so a signal or a kill -9 reaches the program itself.
 */
export interface ServerProcess {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT` once the server printed its address. */
  base: string;
  /** The demo business's sandbox secret key (DEMO_TENANT=true on an empty database), else ''. */
  demoKey: string;
  output: () => string;
  /** Resolves with the exit code (or signal name) when the process has ended. */
  exited: Promise<number | string>;
}

const ROOT = new URL('..', import.meta.url).pathname;

/** Children still running when the test process ends (a timed-out test) are killed with it. */
const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** Environment for a child: the parent's, minus the database settings a test decides itself. */
export function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _url, DATA_DIR: _dir, ...rest } = process.env;
  return { ...rest, LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', SANDBOX_RAIL_DELAY_MS: '100', ...env };
}

export function startServer(env: Record<string, string>, timeoutMs = 180_000): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${timeoutMs} ms:\n${out}`));
    }, timeoutMs);
    const check = () => {
      const m = /API\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(out);
      // The banner's last line: the demo business's curl example, or how to make keys.
      if (!m || !/(\/v1\/customers|--env sandbox)\n/.test(out)) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      const key = /secret key\s+(sk_sandbox_\S+)/.exec(out);
      resolve({ child, base: m[1]!, demoKey: key?.[1] ?? '', output: () => out, exited });
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before it was ready:\n${out}`));
    });
  });
}

/** Runs the operator CLI to completion. */
export function runCli(args: string[], env: Record<string, string>) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: childEnv(env),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Waits for the process to end; SIGKILLs it after `ms` and reports that it had to. */
export async function waitExit(p: ServerProcess, ms: number): Promise<{ code: number | string; killed: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  const result = await Promise.race([p.exited, timeout]);
  clearTimeout(timer);
  if (result !== 'timeout') return { code: result, killed: false };
  p.child.kill('SIGKILL');
  return { code: await p.exited, killed: true };
}

/**
 * A port for a database cluster a test stops and starts again: below the kernel's ephemeral range
 * (32768 and up), so while the cluster is down no outgoing connection and no `listen(0)` of
 * another test file running beside it can take its port and receive its clients.
 */
export async function clusterPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
}

/** One HTTP call; a network failure (refused, reset) is status 0 with the error message. */
export async function call(
  base: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  idempotencyKey?: string,
): Promise<HttpResult> {
  const headers: Record<string, string> = { 'api-key': key };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON: kept as text */
    }
    return { status: res.status, headers: res.headers, body: parsed };
  } catch (err) {
    return { status: 0, headers: new Headers(), body: String((err as Error).cause ?? err) };
  }
}

/**
 * A database of its own for a server child process, on the database this run tests: PostgreSQL
 * (a clone of the run's migrated template) when DATABASE_URL is set, else a fresh PGlite DATA_DIR.
 * `open` opens it from the test process (on PGlite only while no server holds it).
 */
export async function scratchDatabase(): Promise<{
  kind: 'postgres' | 'pglite';
  env: Record<string, string>;
  open: () => Promise<DatabaseHandle>;
  dispose: () => Promise<void>;
}> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const clone = await cloneTemplateDatabase(url);
    return {
      kind: 'postgres',
      env: { DATABASE_URL: clone.url },
      open: async () => openPostgres(clone.url, 2),
      dispose: clone.drop,
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'fsapi-proc-'));
  // Seeded from the run's migrated database: no initdb and no migrations in the child.
  const seed = await openPGlite({ dataDir: join(dir, 'pglite'), loadDataDir: new Blob([readFileSync(inject('pgliteDump'))]) });
  await seed.close();
  return {
    kind: 'pglite',
    env: { DATA_DIR: dir },
    open: () => openPGlite({ dataDir: join(dir, 'pglite') }),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
