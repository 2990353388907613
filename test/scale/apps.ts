import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { openPostgres, type DatabaseHandle } from '../../src/db/client.js';
import { Sealer } from '../../src/lib/crypto.js';
import { newId } from '../../src/lib/ids.js';
import { withDatabase } from '../global-setup.js';

/** A fresh PostgreSQL database cloned from the run's template; its URL and a drop function. */
export async function cloneDatabase(tag = 'x'): Promise<{ url: string; drop: () => Promise<void> }> {
  const base = process.env.DATABASE_URL!;
  const name = `fsapi_${inject('runId')}_${tag}${newId().replace(/-/g, '').slice(-12)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name} template ${inject('pgTemplate')}`);
  await admin.end();
  return {
    url: withDatabase(base, name),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

export interface Instance {
  app: FastifyInstance;
  handle: DatabaseHandle;
  config: Config;
  close(): Promise<void>;
}

/**
 * One API "process" as main.ts builds it: its own pool, its own key cache and change listener,
 * its own counters. Several of them on one database stand for several processes.
 */
export async function startInstance(url: string, sealerKey: string, overrides: Partial<Config> = {}): Promise<Instance> {
  const config = loadConfig({}, { LOG_LEVEL: 'silent', DEMO_TENANT: false, DATABASE_URL: url, ...overrides });
  const handle = openPostgres(url, 4, config.DATABASE_DIRECT_URL, config.DB_PREPARED_STATEMENTS);
  const app = await buildApp({
    config,
    db: handle.db,
    dbKind: handle.kind,
    sealer: new Sealer(sealerKey),
    logger: false,
    changes: handle.changes,
  });
  await app.ready();
  return {
    app,
    handle,
    config,
    async close() {
      await app.close();
      await handle.close();
    },
  };
}

export const newSealerKey = () => randomBytes(32).toString('base64');

export async function get(app: FastifyInstance, key: string, url = '/v1/customers') {
  const res = await app.inject({ method: 'GET', url, headers: { 'api-key': key } });
  return { status: res.statusCode, body: res.json() as any, headers: res.headers };
}

/**
 * Two API "processes" on one fresh database, for a describe block: its beforeAll/afterAll hooks
 * start and stop them; the returned object's fields are set once beforeAll ran.
 */
export function twoInstancesPerSuite(tag: string, overrides: Partial<Config> = {}) {
  const pair = {} as { a: Instance; b: Instance };
  let db: Awaited<ReturnType<typeof cloneDatabase>> | undefined;
  beforeAll(async () => {
    db = await cloneDatabase(tag);
    const key = newSealerKey();
    [pair.a, pair.b] = await Promise.all([startInstance(db.url, key, overrides), startInstance(db.url, key, overrides)]);
  });
  afterAll(async () => {
    await pair.a?.close();
    await pair.b?.close();
    await db?.drop();
  });
  return pair;
}
