import { mkdirSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient, type Transaction } from 'kysely';
import pg from 'pg';
import { PGliteChangeFeed, PostgresChangeFeed, type ChangeFeed } from './change-feed.js';
import { lockDataDir, type DataDirLock } from './data-dir-lock.js';
import { isDatabaseUnavailable } from './errors.js';
import { HostSelector, clientClass, serverRole, targetOf, WrongRole } from './hosts.js';
import { registerProcessInstance } from './instance.js';
import { pipelinedClient, tagConnectionError } from './pipelined-client.js';
import { PGliteDialect } from './pglite-dialect.js';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export type Trx = Transaction<Database>;
/** Either the pool or an open transaction: repos take this so services decide the transaction. */
export type Queryable = Kysely<Database> | Transaction<Database>;
/**
 * Runs `work` in one transaction. Only entry points open transactions (docs/architecture.md, Unit
 * of work): a job or a dashboard service that needs several short ones is handed this by its
 * entry point (`deps.inTransaction`, a worker tick) instead of opening them itself.
 */
export type UnitOfWork = <T>(work: (trx: Trx) => Promise<T>) => Promise<T>;

export interface DatabaseHandle {
  db: Db;
  kind: 'pglite' | 'postgres';
  /** Runs a multi-statement SQL script (migrations). */
  exec(script: string): Promise<void>;
  close(): Promise<void>;
  /** PGlite only: a tarball of the data directory (tests clone a migrated database from it). */
  dumpDataDir?: () => Promise<Blob>;
  /** LISTEN/NOTIFY for caches (src/db/change-feed.ts); PostgreSQL connects it on first use. */
  changes?: ChangeFeed;
  /** Connections of the pool (PostgreSQL) for /metrics. */
  poolStats?: () => PoolStats;
  /** The host the pool writes to (PostgreSQL), `host:port`, for /metrics and logs. */
  primaryInUse?: () => string;
  /** Reads that tolerate lag: a read replica while it is up and close enough, else `db` (runtime.ts). */
  reads?: () => Db;
  /** The read replica for /metrics: its host, its lag at the last probe (null: unreachable), whether reads use it. */
  replicaStats?: () => ReplicaStats;
}

export interface ReplicaStats {
  host: string;
  lagSeconds: number | null;
  inUse: boolean;
}

export interface PoolStats {
  max: number;
  total: number;
  idle: number;
  waiting: number;
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

/** SQLSTATE / errno of "the server is not there or not accepting yet": nothing was sent, a retry is safe. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', '57P03', 'ENOTFOUND', 'EAI_AGAIN']);
/** How long acquiring a connection keeps retrying while PostgreSQL restarts (nothing sent yet). */
const CONNECT_RETRY_MS = 3000;
/** A host that does not answer a connection within this is skipped for the next (several hosts only). */
const CONNECT_TIMEOUT_MS = 2000;

export { PreparedNames } from './pipelined-client.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether a client is on a host that satisfies target_session_attrs (checked once per generation); one that is not is destroyed. */
function roleCheck(selector: HostSelector): (client: pg.PoolClient) => Promise<boolean> {
  // The selector's generation under which each connection last passed the role check.
  const checked = new WeakMap<pg.PoolClient, number>();
  return async (client: pg.PoolClient): Promise<boolean> => {
    if (selector.trivial || checked.get(client) === selector.generation) return true;
    const generation = selector.generation;
    const target = targetOf(client)!;
    let ok = false;
    try {
      ok = selector.accepts(await serverRole(client));
    } catch {
      ok = false;
    }
    if (!ok) {
      client.release(true); // destroyed, not returned to the pool
      selector.advance(target);
      return false;
    }
    checked.set(client, generation);
    selector.confirmed(target);
    return true;
  };
}

/**
 * The pool as Kysely sees it. Every pg client gets an 'error' listener the moment it connects:
 * a client checked out when PostgreSQL restarts (57P01) or the socket drops (ECONNRESET,
 * "Connection terminated unexpectedly") emits 'error', and an unhandled 'error' event would end
 * the process. Its pending query fails with that error instead (and only the request using it
 * fails); pg-pool discards the broken client on release. Acquiring a connection, where nothing
 * was sent yet, is retried for a few seconds while the server is refusing or starting up.
 */
function resilientPool(pool: pg.Pool, prepared: boolean, selector: HostSelector): PostgresPool {
  pool.on('connect', (client) => {
    client.on('error', () => {
      // The query in flight (if any) rejects with this error; nothing else to do here.
    });
  });
  // An idle client whose connection drops: pg-pool removes it; the next query reconnects.
  pool.on('error', () => {});
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let w = wrapped.get(client);
    if (!w) {
      w = pipelinedClient(client, prepared, selector);
      wrapped.set(client, w);
    }
    return w;
  };
  const suitable = roleCheck(selector);
  return {
    async connect() {
      const deadline = Date.now() + CONNECT_RETRY_MS;
      for (let delay = 50; ; ) {
        let lastError: unknown;
        try {
          const client = await pool.connect();
          if (await suitable(client)) return wrap(client);
          lastError = new WrongRole(targetOf(client)!, selector.attrs);
        } catch (err) {
          const code = (err as { code?: string }).code;
          const retryable = code !== undefined && (NOT_CONNECTED.has(code) || (!selector.trivial && isDatabaseUnavailable(err)));
          if (!retryable) throw tagConnectionError(err);
          lastError = err;
        }
        // Another host is left to try in this round: at once. Every host failed: wait, then again.
        if (!selector.trivial && !selector.roundFailed) continue;
        if (Date.now() + delay > deadline) throw tagConnectionError(lastError);
        await sleep(delay);
        delay = Math.min(delay * 2, 500);
        selector.newRound();
      }
    },
    end: () => pool.end(),
  };
}

/** A pool and its Kysely over `url` (several hosts allowed), without the process's other parts: a read replica's. */
export function openPool(url: string, poolSize: number, preparedStatements = true): { db: Db; primaryInUse: () => string } {
  const selector = new HostSelector(url);
  const pool = new pg.Pool({
    ...(selector.trivial ? { connectionString: url } : { Client: clientClass(selector, CONNECT_TIMEOUT_MS), keepAlive: true }),
    max: poolSize,
    pipeline: true,
    types: { getTypeParser: pgTypeParser } as pg.CustomTypesConfig,
  });
  return {
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: resilientPool(pool, preparedStatements, selector) }) }),
    primaryInUse: () => selector.label,
  };
}

/**
 * How long the pool keeps connections nobody uses. `keepOpen` of them stay open however long they
 * idle: the connections the money path's batch lanes use (`poolKeepOpen`). A spare lane opens when
 * a commit stalls, and a new connection then costs its batch the connection itself, a backend with
 * no catalog cached and every statement prepared again, tens of milliseconds while it holds its
 * rows' locks, just when requests are queuing. Above `keepOpen`, a connection closes after
 * `idleMs` unused (pg-pool's 10 s by default).
 */
export interface IdleConnections {
  keepOpen: number;
  idleMs?: number;
}

/**
 * The connections one route's batch lanes can use at once (base and spare: http/idempotency-batch.ts
 * `gathered`), and one for the rest of the process's work. Each gathering route has lanes of its
 * own, but a load that stalls commits is mostly one route's (the transfers').
 */
export function poolKeepOpen(config: { DB_POOL_SIZE: number; TRANSFER_BATCH_LANES: number; TRANSFER_BATCH_SPARE_LANES: number }): number {
  return Math.min(config.DB_POOL_SIZE, config.TRANSFER_BATCH_LANES + config.TRANSFER_BATCH_SPARE_LANES + 1);
}

/**
 * `listenUrl`: a direct URL for LISTEN when `connectionString` goes through PgBouncer.
 * `preparedStatements`: named prepared statements per connection (PreparedNames); off behind a
 * PgBouncer in transaction mode that does not keep them (before 1.21, or max_prepared_statements 0).
 */
export function openPostgres(
  connectionString: string,
  poolSize = 20,
  listenUrl?: string,
  preparedStatements = true,
  idle: IdleConnections = { keepOpen: 0 },
): DatabaseHandle {
  // Several hosts or a target_session_attrs (src/db/hosts.ts): each new connection goes to the host in use.
  const selector = new HostSelector(connectionString);
  const pool = new pg.Pool({
    ...(selector.trivial ? { connectionString } : { Client: clientClass(selector, CONNECT_TIMEOUT_MS), keepAlive: true }),
    max: poolSize,
    // pg-pool closes an idle connection only while it holds more than `min` (one above `max` keeps them all).
    min: idle.keepOpen,
    ...(idle.idleMs !== undefined ? { idleTimeoutMillis: idle.idleMs } : {}),
    // Statements are written as they are issued, each with its own Sync, instead of one at a time
    // after the last one's answer: what lets BEGIN and a transaction's last write be sent together
    // with the statement after them (see wrap above, and idempotency-batch.ts).
    pipeline: true,
    types: { getTypeParser: pgTypeParser } as pg.CustomTypesConfig,
  });
  const connections = resilientPool(pool, preparedStatements, selector);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: connections }) });
  const instance = registerProcessInstance(db, false);
  // Its own selector: the listener follows the primary of its own URL, with the same rules.
  const changes = new PostgresChangeFeed(listenUrl ?? connectionString);
  return {
    db,
    kind: 'postgres',
    changes,
    poolStats: () => ({ max: poolSize, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    primaryInUse: () => selector.label,
    async exec(script) {
      const client = await connections.connect();
      const query = client.query as unknown as (text: string) => Promise<unknown>;
      try {
        await query(script);
      } catch (err) {
        await query('rollback').catch(() => {});
        throw tagConnectionError(err);
      } finally {
        client.release();
      }
    },
    async close() {
      await changes.close();
      await instance.retire();
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
  // One process per data directory: a second one fails here, naming the process that holds it.
  let lock: DataDirLock | undefined;
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    lock = lockDataDir(options.dataDir);
  }
  let pglite: PGlite;
  try {
    // Loaded here, not at start: a server on PostgreSQL never needs it, and its module alone
    // takes megabytes of the process's memory.
    const [{ PGlite }, { pg_trgm }] = await Promise.all([import('@electric-sql/pglite'), import('@electric-sql/pglite/contrib/pg_trgm')]);
    pglite = await PGlite.create({
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
      parsers: { [INT8]: (v: string) => BigInt(v), [NUMERIC]: (v: string) => v, [DATE]: (v: string) => v },
      // The customers' keyword search index (migration 1104).
      extensions: { pg_trgm },
    });
  } catch (err) {
    lock?.release();
    throw err;
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
  // Behind the lock no other process can be alive on this database.
  const instance = registerProcessInstance(db, lock !== undefined);
  const changes = new PGliteChangeFeed(pglite, db);
  return {
    db,
    kind: 'pglite',
    changes,
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
      try {
        await changes.close();
        await instance.retire();
        await db.destroy();
      } finally {
        lock?.release();
      }
    },
    async dumpDataDir() {
      return db.connection().execute(async () => pglite.dumpDataDir('gzip'));
    },
  };
}

export async function openDatabase(config: {
  DATABASE_URL?: string;
  DATABASE_DIRECT_URL?: string;
  DATA_DIR: string;
  DB_POOL_SIZE: number;
  DB_PREPARED_STATEMENTS?: boolean;
  TRANSFER_BATCH_LANES: number;
  TRANSFER_BATCH_SPARE_LANES: number;
}) {
  return config.DATABASE_URL
    ? openPostgres(config.DATABASE_URL, config.DB_POOL_SIZE, config.DATABASE_DIRECT_URL, config.DB_PREPARED_STATEMENTS ?? true, {
        keepOpen: poolKeepOpen(config),
      })
    : openPGlite({ dataDir: `${config.DATA_DIR}/pglite` });
}

export async function ping(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
