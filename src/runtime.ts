import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Config } from './config.js';
import { openDatabase, type DatabaseHandle } from './db/client.js';
import { checkConnectionBudget } from './db/budget.js';
import { migrate } from './db/migrate.js';
import { ReadReplica } from './db/replica.js';
import { Sealer } from './lib/crypto.js';

/**
 * What both the server and the operator CLI need: the configured database, migrated, and the
 * key that seals secrets at rest. In development without SECRETS_KEY a key is generated once
 * into DATA_DIR (mode 0600) so stored secrets survive restarts.
 */
export async function openRuntime(config: Config): Promise<{ handle: DatabaseHandle; sealer: Sealer }> {
  const handle = await openDatabase(config);
  await migrate(handle);
  if (config.DATABASE_READ_URL && handle.kind === 'postgres') await attachReplica(handle, config);
  return { handle, sealer: new Sealer(config.SECRETS_KEY ?? localSecretsKey(config.DATA_DIR)) };
}

/** DATABASE_READ_URL: lag-tolerant reads go to a replica while it is up and within DB_READ_MAX_LAG_SECONDS. */
export async function attachReplica(
  handle: DatabaseHandle,
  config: Pick<Config, 'DATABASE_READ_URL' | 'DB_POOL_SIZE' | 'DB_READ_MAX_LAG_SECONDS'>,
) {
  const replica = new ReadReplica(
    config.DATABASE_READ_URL!,
    Math.max(2, Math.ceil(config.DB_POOL_SIZE / 2)),
    handle.db,
    config.DB_READ_MAX_LAG_SECONDS,
  );
  await replica.start();
  const close = handle.close.bind(handle);
  Object.assign(handle, {
    reads: () => replica.reads(),
    replicaStats: () => ({ host: replica.host, lagSeconds: replica.lagSeconds, inUse: replica.inUse }),
    async close() {
      await replica.close();
      await close();
    },
  });
  return replica;
}

function localSecretsKey(dataDir: string): string {
  const file = join(dataDir, 'secrets.key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32).toString('base64');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * The connection budget (src/db/budget.ts, docs/scaling.md): a deployment whose pools cannot fit
 * max_connections (DB_CLUSTER_PROCESSES set) refuses to start; a tight one is warned about.
 */
export async function checkDatabaseBudget(config: Config, handle: DatabaseHandle): Promise<void> {
  if (handle.kind !== 'postgres') return; // PGlite: one process, one connection
  const verdict = await checkConnectionBudget(handle.db, {
    poolSize: config.DB_POOL_SIZE,
    listener: config.ROLE !== 'worker',
    processes: config.DB_CLUSTER_PROCESSES,
    pooled: Boolean(config.DATABASE_DIRECT_URL && config.DATABASE_DIRECT_URL !== config.DATABASE_URL),
  });
  if (verdict.level === 'error') {
    await handle.close();
    throw new Error(verdict.message);
  }
  if (verdict.level === 'warn') console.warn(`warning: ${verdict.message}`);
}
