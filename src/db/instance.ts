import { hostname } from 'node:os';
import { sql, type Kysely } from 'kysely';
import { newId } from '../lib/ids.js';
import type { Database } from './types.js';

interface ProcessInstancesTable {
  id: string;
  pid: number;
  host: string;
  started_at: Date;
  heartbeat_at: Date;
}

declare module './types.js' {
  interface Database {
    process_instances: ProcessInstancesTable;
  }
}

/** How often a live process refreshes its heartbeat. */
export const HEARTBEAT_MS = 1000;
/** A process whose heartbeat is older than this is dead: the work it claimed may be taken over. */
export const STALE_AFTER_SECONDS = 5;

/**
 * This process, as other processes sharing the database see it: a row in `process_instances`
 * whose heartbeat it refreshes every second while it runs. Work that must not run twice at once
 * (idempotency claims) records its owner's id, so another process can tell "still running" from
 * "its process is gone" without waiting for a lease to run out.
 *
 * Registered lazily on first use; `retire` (called when the database handle closes) stops the
 * heartbeat and deletes the row, which frees this process's leftover claims at once.
 *
 * `exclusive`: this process is the only one that can open the database (embedded PGlite behind
 * its data-directory lock), so every other instance row is a dead process and is deleted.
 */
export class ProcessInstance {
  readonly id = newId();
  private registered: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private retired = false;
  private readonly retries = new Set<() => Promise<unknown>>();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly exclusive: boolean,
  ) {}

  /** Registers this process (once) and returns its id. */
  async ensure(): Promise<string> {
    if (this.retired) throw new Error('the database handle is closed');
    this.registered ??= this.register().catch((err: unknown) => {
      this.registered = undefined; // the next call tries again
      throw err;
    });
    await this.registered;
    return this.id;
  }

  /**
   * Cleanup that failed because the database was away (releasing a claim): retried on every
   * heartbeat until it succeeds, so a live process never leaves a claim blocked for a lease.
   */
  retryLater(task: () => Promise<unknown>): void {
    if (!this.retired) this.retries.add(task);
  }

  async retire(): Promise<void> {
    this.retired = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.registered) return;
    await this.registered.catch(() => {});
    await Promise.all([...this.retries].map((task) => task().catch(() => {})));
    this.retries.clear();
    await this.db
      .deleteFrom('process_instances')
      .where('id', '=', this.id)
      .execute()
      .catch(() => {}); // the database is gone: the heartbeat goes stale instead
  }

  private async register(): Promise<void> {
    if (this.exclusive) await this.db.deleteFrom('process_instances').execute();
    await this.beat();
    this.timer = setInterval(() => void this.tick(), HEARTBEAT_MS);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    await sql`insert into process_instances (id, pid, host) values (${this.id}, ${process.pid}, ${hostname().slice(0, 255)})
      on conflict (id) do update set heartbeat_at = now()`.execute(this.db);
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.retired) return;
    this.ticking = true;
    try {
      await this.beat();
      for (const task of [...this.retries]) {
        await task();
        this.retries.delete(task);
      }
      // Rows of processes dead for a day: nothing refers to them any more that matters.
      if (Math.random() < 0.01) {
        await sql`delete from process_instances where heartbeat_at < now() - interval '1 day'`.execute(this.db);
      }
    } catch {
      // The database is unreachable: the next tick tries again.
    } finally {
      this.ticking = false;
    }
  }
}

const instances = new WeakMap<object, ProcessInstance>();

/** Called by the code that opens a database: one instance per database handle. */
export function registerProcessInstance(db: Kysely<Database>, exclusive: boolean): ProcessInstance {
  const instance = new ProcessInstance(db, exclusive);
  instances.set(db, instance);
  return instance;
}

/** This process's instance on `db` (a non-exclusive one when the opener registered none). */
export function processInstance(db: Kysely<Database>): ProcessInstance {
  return instances.get(db) ?? registerProcessInstance(db, false);
}
