import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPGlite } from '../../src/db/client.js';
import { appOnDatabase } from '../harness.js';

/**
 * The first operator comes from the command line: `ops operators add` prints a one-time setup
 * link; opened on the server, it sets the password and logs the operator in as an admin.
 */
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('cli ops operators', () => {
  it('adds the first operator with a setup link that logs in once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'fsapi-ops-'));
    dirs.push(dataDir);
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const env = { ...rest, DATA_DIR: dataDir };
    const out = execFileSync(
      'npx',
      ['tsx', 'src/cli.ts', 'ops', 'operators', 'add', '--email', 'Root@Ops.example.com', '--role', 'admin', '--json'],
      {
        env,
        encoding: 'utf8',
      },
    );
    const created = JSON.parse(out.trim());
    expect(created).toMatchObject({ email: 'root@ops.example.com', role: 'admin' });
    expect(created.setupPath).toMatch(/^\/ops\/setup\/[\w-]{43}$/);

    const handle = await openPGlite({ dataDir: join(dataDir, 'pglite') });
    const app = await appOnDatabase(handle.db, handle.kind);
    try {
      const page = await app.inject({ method: 'GET', url: created.setupPath });
      expect(page.statusCode).toBe(200);
      const csrf = /fso_csrf=([\w-]{43})/.exec(String(page.headers['set-cookie']))![1]!;
      const done = await app.inject({
        method: 'POST',
        url: created.setupPath,
        headers: { cookie: `fso_csrf=${csrf}`, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ _csrf: csrf, password: 'a long operator password' }).toString(),
      });
      expect(done.statusCode).toBe(303);
      const session = String(done.headers['set-cookie']).split(';')[0]!;
      expect((await app.inject({ method: 'GET', url: '/ops/operators', headers: { cookie: session } })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: created.setupPath })).statusCode).toBe(404);
      const audit = await handle.db.selectFrom('ops_audit_log').select(['operator_email', 'action']).orderBy('id').execute();
      expect(audit).toEqual([
        { operator_email: 'cli', action: 'operator.created' },
        { operator_email: 'root@ops.example.com', action: 'operator.setup' },
      ]);
    } finally {
      await app.close();
      await handle.close();
    }
  }, 180_000);
});
