import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openPGlite, openPostgres } from '../../src/db/client.js';
import { lookupKey } from '../../src/modules/tenants/service.js';
import { Sealer } from '../../src/lib/crypto.js';
import { startTestApp } from '../harness.js';

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'fsapi-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('operator CLI', () => {
  it('tenant create --json prints exactly the contract object, and the keys work', async () => {
    const dataDir = tempDir();
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const env = { ...rest, DATA_DIR: dataDir };
    const out = execFileSync('npx', ['tsx', 'src/cli.ts', 'tenant', 'create', '--name', 'Acme Ltd', '--json'], {
      env,
      encoding: 'utf8',
    });
    const lines = out.trim().split('\n');
    expect(lines).toHaveLength(1);
    const created = JSON.parse(lines[0]!);
    expect(Object.keys(created).sort()).toEqual(['live', 'sandbox', 'tenant_id']);
    expect(created.sandbox.secret_key).toMatch(/^sk_sandbox_/);
    expect(created.live.public_key).toMatch(/^pk_live_/);

    const db = await openPGlite({ dataDir: join(dataDir, 'pglite') });
    try {
      const found = await lookupKey(db.db, created.sandbox.secret_key);
      expect(found).toMatchObject({ ok: true, tenantId: created.tenant_id, environment: 'sandbox', kind: 'secret' });
    } finally {
      await db.close();
    }

    const bad = spawnSync('npx', ['tsx', 'src/cli.ts', 'tenant', 'create'], { env, encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--name');
  }, 180_000);
});

describe('TLS', () => {
  it('serves HTTPS itself when given a certificate and key, with HSTS', async () => {
    const dir = tempDir();
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    try {
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'],
        { stdio: 'ignore' },
      );
    } catch {
      console.warn('openssl missing: TLS test skipped');
      return;
    }
    const t = await startTestApp({
      TLS_CERT_FILE: cert,
      TLS_KEY_FILE: key,
      PROFILE: 'production',
      SECRETS_KEY: Buffer.alloc(32, 1).toString('base64'),
    });
    try {
      const biz = await t.tenant();
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const port = (t.app.server.address() as { port: number }).port;
      const res = await new Promise<{ status: number; hsts: string | undefined; body: string }>((resolve, reject) => {
        const req = httpsRequest(
          { host: '127.0.0.1', port, path: '/v1/customers', headers: { 'api-key': biz.sandbox.secret_key }, rejectUnauthorized: false },
          (r) => {
            let body = '';
            r.on('data', (c) => (body += c));
            r.on('end', () => resolve({ status: r.statusCode ?? 0, hsts: r.headers['strict-transport-security'] as string, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(res.status).toBe(200);
      expect(res.hsts).toContain('max-age=');
    } finally {
      await t.close();
    }
  });
});

describe('database down', () => {
  it('answers 503 service_unavailable with Retry-After, never a 500', async () => {
    const handle = openPostgres('postgres://postgres@127.0.0.1:1/none', 1);
    const config = loadConfig({}, { LOG_LEVEL: 'silent' });
    const app = await buildApp({
      config,
      db: handle.db,
      dbKind: 'postgres',
      sealer: new Sealer(Buffer.alloc(32).toString('base64')),
      logger: false,
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/v1/customers', headers: { 'api-key': 'sk_sandbox_' + 'a'.repeat(43) } });
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('service_unavailable');
      expect(res.headers['retry-after']).toBe('5');
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
    } finally {
      await app.close();
      await handle.close();
    }
  });
});
