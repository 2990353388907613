import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { expect, it } from 'vitest';
import { scratchDatabase, startServer } from '../server-process.js';

/**
 * The README's tour, as written: the shell block between its tour markers, run with bash against
 * the real server (its demo business's sandbox key), so the tour cannot rot. It must capture every
 * id, end with the account's transactions, and show the webhooks arriving at its local receiver.
 */
function tourBlock(): string {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const tour = /<!-- tour:start -->([\s\S]*?)<!-- tour:end -->/.exec(readme)?.[1];
  expect(tour, 'README.md has the tour markers').toBeDefined();
  const blocks = [...tour!.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks, 'one shell block in the tour').toHaveLength(1);
  return blocks[0]!;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function runBash(script: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-c', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 90_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      // The receiver is the script's own background job: never left behind when a step failed.
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      resolve({ code, out });
    });
  });
}

it('runs the README tour against a started server', async () => {
  const script = tourBlock();
  const scratch = await scratchDatabase();
  const server = await startServer({ ...scratch.env, DEMO_TENANT: 'true' });
  try {
    expect(server.demoKey).toMatch(/^sk_sandbox_/);
    const port = new URL(server.base).port;
    const { code, out } = await runBash(script, { KEY: server.demoKey, PORT: port, HOOK_PORT: String(await freePort()) });
    expect(code, out).toBe(0);
    const ids = [...out.matchAll(/customer (\S+), accounts (\S+) and (\S+), transfer (\S+)/g)][0];
    expect(ids, out).toBeDefined();
    for (const id of ids!.slice(1)) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(out).toContain('completed'); // the KYC simulation's review_status
    expect(out).toMatch(/^out 250\.50 NGN balance 749\.50$/m);
    expect(out).toMatch(/^in 1000\.00 NGN balance 1000\.00$/m);
    expect(out).toMatch(/^webhook: customer\.kyc\.status\.approved$/m);
    expect(out).toMatch(/^webhook: transfer\.status\.completed$/m);
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    await scratch.dispose();
  }
}, 240_000);
