import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import client from 'prom-client';
import type { Db, PoolStats, ReplicaStats } from '../db/client.js';
import { ping } from '../db/client.js';
import { metricsRegistry } from '../lib/metrics.js';

/**
 * /healthz (process up), /readyz (database answers), /metrics (Prometheus, this process):
 * requests by route and status (count and latency histogram), the process-wide registry of
 * src/lib/metrics.ts (posting batch sizes, job ticks, webhook delivery lag), pool usage,
 * the job queues' depth and oldest age (read from the database when scraped), and the registries
 * modules hand in (`more`: the bank reconciliation gauge).
 */
export function registerObservability(
  app: FastifyInstance,
  db: Db,
  poolStats?: () => PoolStats,
  extra: {
    primaryInUse?: (() => string) | undefined;
    replicaStats?: (() => ReplicaStats) | undefined;
    more?: client.Registry[];
  } = {},
): void {
  const { primaryInUse, replicaStats, more = [] } = extra;
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const { duration, requests } = requestMetrics(registry);
  if (poolStats) registerPoolMetrics(registry, poolStats);
  if (primaryInUse) registerReplicationMetrics(registry, db, primaryInUse);
  if (replicaStats) registerReplicaMetrics(registry, replicaStats);
  registerQueueMetrics(registry, db);

  app.addHook('onResponse', async (request, reply) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
    duration.observe(labels, reply.elapsedTime / 1000);
    requests.inc(labels);
  });

  const hide = { hide: true } as const;
  app.get('/healthz', { schema: hide }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: hide }, async (_req, reply) => {
    try {
      await ping(db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).header('Retry-After', '5').send({ status: 'database unavailable' });
    }
  });
  app.get('/metrics', { schema: hide }, async (_req, reply) =>
    reply
      .type(registry.contentType)
      .send([await registry.metrics(), await metricsRegistry.metrics(), ...(await Promise.all(more.map((r) => r.metrics())))].join('\n')),
  );
}

/** Requests by route and status: a count and a latency histogram. */
function requestMetrics(registry: client.Registry) {
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by route and status (a rate: rate(http_requests_total[1m]))',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  return { duration, requests };
}

function registerPoolMetrics(registry: client.Registry, poolStats: () => PoolStats): void {
  new client.Gauge({
    name: 'fsapi_db_pool_connections',
    help: 'Database pool of this process: max, total (open), idle, waiting (requests queued for a connection)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = poolStats();
      for (const [state, value] of Object.entries(s)) this.set({ state }, value);
    },
  });
}

/** The read replica: its lag at the last probe, and whether reads go to it. */
function registerReplicaMetrics(registry: client.Registry, replicaStats: () => ReplicaStats): void {
  new client.Gauge({
    name: 'fsapi_db_read_replica_lag_seconds',
    help: 'How far behind the primary the read replica is, at its last probe (absent: unreachable)',
    labelNames: ['host'],
    registers: [registry],
    collect() {
      this.reset();
      const s = replicaStats();
      if (s.lagSeconds !== null) this.set({ host: s.host }, s.lagSeconds);
    },
  });
  new client.Gauge({
    name: 'fsapi_db_read_replica_in_use',
    help: 'Whether lag-tolerant reads go to the read replica (1) or to the primary (0: replica down or too far behind)',
    labelNames: ['host'],
    registers: [registry],
    collect() {
      this.reset();
      const s = replicaStats();
      this.set({ host: s.host }, s.inUse ? 1 : 0);
    },
  });
}

/** The job queues' depth and oldest age, read from the database when scraped. */
function registerQueueMetrics(registry: client.Registry, db: Db): void {
  const queues = queueReader(db);
  for (const [name, help, pick] of [
    ['fsapi_job_queue_depth', 'Rows due for a background job, by queue', 'depth'],
    ['fsapi_job_queue_oldest_age_seconds', 'How long the oldest due row of each queue has waited', 'age'],
  ] as const) {
    new client.Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers: [registry],
      async collect() {
        this.reset();
        try {
          for (const r of await queues()) this.set({ queue: r.queue }, r[pick]);
        } catch {
          // database unavailable: the gauge is empty for this scrape (readyz says why)
        }
      },
    });
  }
}

/**
 * PostgreSQL only: the host this process writes to (a failover changes it: docs/operations.md),
 * and each standby's lag as the primary sees it (pg_stat_replication: bytes of WAL not yet
 * replayed, and the time its last replay took to catch up).
 */
function registerReplicationMetrics(registry: client.Registry, db: Db, primaryInUse: () => string): void {
  new client.Gauge({
    name: 'fsapi_db_primary',
    help: 'The PostgreSQL host (host:port) this process sends its writes to: 1 for the one in use',
    labelNames: ['host'],
    registers: [registry],
    collect() {
      this.reset();
      this.set({ host: primaryInUse() }, 1);
    },
  });
  const standbys = standbyReader(db);
  for (const [name, help, pick] of [
    ['fsapi_db_replica_lag_bytes', 'WAL the primary has written that each standby has not replayed yet', 'bytes'],
    ['fsapi_db_replica_lag_seconds', 'Replay lag of each standby as the primary reports it (0 when idle)', 'seconds'],
  ] as const) {
    new client.Gauge({
      name,
      help,
      labelNames: ['standby', 'sync_state'],
      registers: [registry],
      async collect() {
        this.reset();
        try {
          for (const r of await standbys()) this.set({ standby: r.standby, sync_state: r.sync_state }, r[pick]);
        } catch {
          // database unavailable (a failover under way): the gauge is empty for this scrape
        }
      },
    });
  }
}

function standbyReader(db: Db) {
  let cached: { at: number; value: Promise<Array<{ standby: string; sync_state: string; bytes: number; seconds: number }>> } | undefined;
  return () => {
    if (cached && Date.now() - cached.at < 1000) return cached.value;
    const value = sql<{ standby: string; sync_state: string; bytes: string | null; seconds: string | null }>`
      select application_name || coalesce('@' || host(client_addr), '') as standby, coalesce(sync_state, 'unknown') as sync_state,
             pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::text as bytes,
             extract(epoch from coalesce(replay_lag, interval '0'))::text as seconds
        from pg_stat_replication`
      .execute(db)
      .then(({ rows }) =>
        rows.map((r) => ({ standby: r.standby, sync_state: r.sync_state, bytes: Number(r.bytes ?? 0), seconds: Number(r.seconds ?? 0) })),
      );
    cached = { at: Date.now(), value };
    value.catch(() => (cached = undefined));
    return value;
  };
}

/** The job queues, one query, read at most once a second (both gauges share it). */
function queueReader(db: Db) {
  let cached: { at: number; value: Promise<Array<{ queue: string; depth: number; age: number }>> } | undefined;
  return () => {
    if (cached && Date.now() - cached.at < 1000) return cached.value;
    const value = sql<{ queue: string; depth: string; age: string | null }>`
      select 'webhook_deliveries' as queue, count(*)::text as depth,
             extract(epoch from now() - min(next_attempt_at))::text as age
        from webhook_deliveries where status in ('pending', 'retrying') and next_attempt_at <= now()
      union all
      select 'webhook_fanout', count(*)::text, extract(epoch from now() - min(e.created_at))::text
        from event_fanout_queue q join events e on e.id = q.event_id
      union all
      select 'rail_settlement', count(*)::text, extract(epoch from now() - min(settle_after))::text
        from rail_payouts where state = 'submitted' and settle_after is not null and settle_after <= now()
      union all
      select 'collection_expiry', count(*)::text, extract(epoch from now() - min(expires_at))::text
        from collections where status = 'pending' and expires_at <= now()
      union all
      select 'card_authorization_expiry', count(*)::text, extract(epoch from now() - min(expires_at))::text
        from card_authorizations where status = 'approved' and expires_at <= now()`
      .execute(db)
      .then(({ rows }) => rows.map((r) => ({ queue: r.queue, depth: Number(r.depth), age: Math.max(0, Number(r.age ?? 0)) })));
    cached = { at: Date.now(), value };
    value.catch(() => (cached = undefined));
    return value;
  };
}
