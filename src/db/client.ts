import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { PGliteDialect } from './pglite-dialect.js';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;
/** Either the pool or an open transaction: repos take this so services decide the transaction. */
export type Queryable = Kysely<Database> | Transaction<Database>;

export interface DatabaseHandle {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Runs a multi-statement SQL script (migrations). */
  exec(script: string): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: a tarball of the data directory (tests clone a migrated database from it). */
  dumpDataDir?: () => Promise<Blob>;
}

const INT8 = 20;
const NUMERIC = 1700;
const DATE = 1082;

/**
 * int8 is parsed as bigint on both drivers (money is bigint inside); numeric and date stay strings
 * (rates are decimal strings; a date has no time zone to shift).
 */
function pgTypeParser(oid: number, format?: string): (value: string) => unknown {
  if (oid === INT8) return (v) => BigInt(v);
  if (oid === NUMERIC || oid === DATE) return (v) => v;
  return pg.types.getTypeParser(oid, format as 'text');
}

export function openPostgres(connectionString: string, poolSize = 20): DatabaseHandle {
  const pool = new pg.Pool({
    connectionString,
    max: poolSize,
    types: { getTypeParser: pgTypeParser } as pg.CustomTypesConfig,
  });
  // A dropped idle connection must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    kind: 'postgres',
    async exec(script) {
      const client = await pool.connect();
      try {
        await client.query(script);
      } catch (err) {
        await client.query('rollback').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async close() {
      await db.destroy();
    },
  };
}

export interface PGliteOptions {
  dataDir?: string;
  /** A data directory dump to start from (tests clone a migrated database this way). */
  loadDataDir?: Blob | File;
}

export async function openPGlite(options: PGliteOptions = {}): Promise<DatabaseHandle> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const pglite = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    parsers: { [INT8]: (v: string) => BigInt(v), [NUMERIC]: (v: string) => v, [DATE]: (v: string) => v },
  });
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  return {
    db,
    kind: 'pglite',
    async exec(script) {
      // Through Kysely's connection queue so a script never interleaves with other work.
      await db.connection().execute(async () => {
        try {
          await pglite.exec(script);
        } catch (err) {
          await pglite.exec('rollback').catch(() => {});
          throw err;
        }
      });
    },
    async close() {
      await db.destroy();
    },
    async dumpDataDir() {
      return db.connection().execute(async () => pglite.dumpDataDir('gzip'));
    },
  };
}

export async function openDatabase(config: { DATABASE_URL?: string; DATA_DIR: string; DB_POOL_SIZE: number }) {
  return config.DATABASE_URL
    ? openPostgres(config.DATABASE_URL, config.DB_POOL_SIZE)
    : openPGlite({ dataDir: `${config.DATA_DIR}/pglite` });
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
