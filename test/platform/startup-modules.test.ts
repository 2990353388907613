import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Packages that only some requests or settings need are loaded when first used, not when a process
 * starts: every API and worker process would otherwise hold them (ssh2 keeps a WebAssembly memory),
 * and the server's peak memory under load has a target (docs/benchmarks.md).
 */
const LOADED_ON_FIRST_USE = ['ssh2', 'ssh2-sftp-client', 'pdfkit', 'fontkit', 'nodemailer', 'ioredis', '@zxcvbn-ts'];

describe('start-up', () => {
  it('does not load the SFTP, PDF, mail, Redis or password-list packages until they are used', () => {
    const root = resolve(import.meta.dirname, '../..');
    const dir = mkdtempSync(join(tmpdir(), 'fsapi-startup-'));
    const probe = join(dir, 'probe.mjs');
    // Everything `npm start` imports (main.ts without starting it): the app, its workers, the runtime.
    writeFileSync(
      probe,
      `import { createRequire } from 'node:module';
for (const m of ['src/app.ts', 'src/workers/index.ts', 'src/runtime.ts', 'src/dashboard/service.ts']) await import(${JSON.stringify(root)} + '/' + m);
const loaded = Object.keys(createRequire(import.meta.url).cache);
const names = ${JSON.stringify(LOADED_ON_FIRST_USE)};
console.log(JSON.stringify(names.filter((p) => loaded.some((f) => f.includes('/node_modules/' + p + '/')))));
`,
    );
    const run = spawnSync(process.execPath, ['--import', 'tsx', probe], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toEqual([]);
  });
});
