import type { Config } from '../config.js';
import type { Db, Trx } from '../db/client.js';
import type { Counters } from '../lib/counters.js';
import type { Sealer } from '../lib/crypto.js';
import type { Idempotency } from './idempotency.js';

/** What every module's routes may use: built once by app.ts and passed in, never imported as singletons. */
export interface Deps {
  config: Config;
  db: Db;
  /**
   * For reads that tolerate lag (lists, exports, reports, reference data): a read replica while it
   * is up and close enough (DATABASE_READ_URL), else `db`. Reads that must see the client's own
   * writes (balances, a resource just made, idempotency, keys) use `db`.
   */
  readDb(): Db;
  dbKind: 'pglite' | 'postgres';
  sealer: Sealer;
  idempotency: Idempotency;
  /** Rate-limit and login-limit counters: Redis (shared by every process) or this process's memory. */
  counters: Counters;
  /**
   * The unit of work of a PUT, PATCH or DELETE (a POST's is the idempotency wrapper's): services
   * take the transaction and never open one; the entry point owns it.
   */
  inTransaction<T>(work: (trx: Trx) => Promise<T>): Promise<T>;
  /**
   * Reads of one moment: a read-only repeatable-read transaction, for a page whose figures must
   * agree with each other (the dashboard's overview).
   */
  inSnapshot<T>(work: (trx: Trx) => Promise<T>): Promise<T>;
}
