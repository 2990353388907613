import { sql } from 'kysely';
import { openPool, type Db } from './client.js';

/**
 * Read replicas for reads that tolerate lag. A probe asks the replica every second how far
 * behind it is; while it answers and is within `maxLagSeconds`, `reads()` is the replica, else
 * the primary. Reads that must see the client's own writes never come here (docs/operations.md).
 */
export class ReadReplica {
  readonly db: Db;
  private readonly hostOf: () => string;
  /** Seconds behind the primary at the last probe; null when the last probe failed. */
  lagSeconds: number | null = null;
  private usable = false;
  private timer: NodeJS.Timeout | undefined;
  private probing: Promise<void> | undefined;

  constructor(
    url: string,
    poolSize: number,
    private readonly primary: Db,
    private readonly maxLagSeconds: number,
    private readonly probeMs = 1000,
  ) {
    const pool = openPool(url, poolSize);
    this.db = pool.db;
    this.hostOf = pool.primaryInUse;
  }

  /** The replica in use, `host:port`. */
  get host(): string {
    return this.hostOf();
  }

  /** Whether lag-tolerant reads go to the replica now. */
  get inUse(): boolean {
    return this.usable;
  }

  /** The database for a read that tolerates lag. */
  reads(): Db {
    return this.usable ? this.db : this.primary;
  }

  /** Probes once now (start-up, tests), then every `probeMs`. */
  async start(): Promise<void> {
    await this.probe();
    this.timer = setInterval(() => {
      if (!this.probing) this.probing = this.probe().finally(() => (this.probing = undefined));
    }, this.probeMs);
    this.timer.unref();
  }

  /**
   * Lag is 0 while the replica streams and has replayed all it received; otherwise the age of its
   * last replayed transaction (a replica cut off from its primary falls behind by the clock, not
   * by a figure that stays 0). A server that is not in recovery is a primary: 0.
   */
  async probe(): Promise<void> {
    try {
      const { rows } = await sql<{ lag: number | string | null }>`
        select case
          when not pg_is_in_recovery() then 0
          when exists (select 1 from pg_stat_wal_receiver where status = 'streaming')
               and pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
          else coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()), 0)
        end::float8 as lag`.execute(this.db);
      this.lagSeconds = Number(rows[0]?.lag ?? 0);
      this.usable = this.lagSeconds <= this.maxLagSeconds;
    } catch {
      this.lagSeconds = null;
      this.usable = false;
    }
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.probing;
    await this.db.destroy();
  }
}
