import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('production start', () => {
  it('npm start runs the compiled server with plain node (no TypeScript loader)', () => {
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    // V8 flags only (src/main.ts says which and why), no loader or --import.
    expect(scripts.start).toMatch(/^node (--(?!import|loader|require)[a-z-]+(=\d+)? )*dist\/main\.js$/);
    expect(scripts.prestart).toContain('build');
  });

  it('the built server (node dist/main.js) migrates from dist/, starts and answers /healthz and /readyz', async () => {
    execFileSync(process.execPath, [join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'pipe' });
    const dataDir = mkdtempSync(join(tmpdir(), 'fsapi-dist-'));
    dirs.push(dataDir);
    // Plain node, no NODE_OPTIONS: a module that still needed a transpiler could not load.
    const { DATABASE_URL: _db, NODE_OPTIONS: _opts, ...env } = process.env;
    const child = spawn(process.execPath, [join(root, 'dist/main.js')], {
      cwd: root,
      env: { ...env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      const base = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no API address printed:\n${output}`)), 120_000);
        child.stdout.on('data', () => {
          const m = /API\s+(http:\/\/\S+)\/v1/.exec(output);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]!);
          }
        });
        child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
      });
      const health = await fetch(`${base}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      // The dashboard's static assets resolve next to the compiled module too.
      const css = await fetch(`${base}/dashboard/static/app.css`);
      expect(css.status).toBe(200);
      // The demo tenant exists, so the migrations copied into dist/ ran.
      const key = /secret key\s+(sk_\S+)/.exec(output)?.[1];
      expect(key).toBeDefined();
      const customers = await fetch(`${base}/v1/customers`, { headers: { 'api-key': key! } });
      expect(customers.status).toBe(200);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }, 300_000);
});
