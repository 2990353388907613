import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { openPGlite, openPostgres } from '../src/db/client.js';
import { migrate } from '../src/db/migrate.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pgTemplate: string;
    pgliteDump: string;
    runId: string;
  }
}

/**
 * Prepares one migrated database per test run; every test file then clones it:
 * - PostgreSQL (DATABASE_URL set): a template database, cloned with CREATE DATABASE … TEMPLATE.
 * - PGlite: a dump of a migrated data directory, loaded by each file (no initdb per file).
 * Everything this run created is dropped at the end, so runs never share state.
 */
export default async function setup(project: TestProject) {
  const runId = `t${process.pid}_${Date.now().toString(36)}`;
  project.provide('runId', runId);
  const url = process.env.DATABASE_URL;
  if (url) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const template = `fsapi_${runId}_tpl`;
    await admin.query(`create database ${template}`);
    const handle = openPostgres(withDatabase(url, template), 2);
    await migrate(handle);
    await handle.close();
    project.provide('pgTemplate', template);
    project.provide('pgliteDump', '');
    return async () => {
      const { rows } = await admin.query<{ datname: string }>(`select datname from pg_database where datname like $1`, [
        `fsapi_${runId}_%`,
      ]);
      for (const { datname } of rows) await admin.query(`drop database if exists ${datname} with (force)`);
      await admin.end();
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'fsapi-test-'));
  const handle = await openPGlite();
  await migrate(handle);
  const dump = join(dir, 'migrated.tar.gz');
  const blob = await handle.dumpDataDir!();
  writeFileSync(dump, Buffer.from(await blob.arrayBuffer()));
  await handle.close();
  project.provide('pgTemplate', '');
  project.provide('pgliteDump', dump);
  return () => rmSync(dir, { recursive: true, force: true });
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
