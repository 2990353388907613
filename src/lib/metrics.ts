import client from 'prom-client';

/**
 * Process-wide metrics that code below the HTTP layer records (the posting batches, the job
 * loops, webhook delivery). `/metrics` of each process serves this registry beside the HTTP one.
 * Hooks are plain functions so a caller needs no knowledge of Prometheus.
 */
export const metricsRegistry = new client.Registry();

const batchSize = new client.Histogram({
  name: 'fsapi_commit_batch_size',
  help: 'Requests written together in one batch of the posting path',
  labelNames: ['batch'],
  buckets: [1, 2, 4, 8, 16, 32, 48, 60],
  registers: [metricsRegistry],
});

const jobTicks = new client.Counter({
  name: 'fsapi_job_ticks_total',
  help: 'Background job ticks by job and outcome',
  labelNames: ['job', 'outcome'],
  registers: [metricsRegistry],
});

const jobDuration = new client.Histogram({
  name: 'fsapi_job_tick_duration_seconds',
  help: 'Duration of one background job tick',
  labelNames: ['job'],
  buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
  registers: [metricsRegistry],
});

const webhookLag = new client.Histogram({
  name: 'fsapi_webhook_delivery_lag_seconds',
  help: 'From an event being recorded to its delivery attempt finishing',
  labelNames: ['outcome'],
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 3600],
  registers: [metricsRegistry],
});

const batchWait = new client.Histogram({
  name: 'fsapi_batch_wait_seconds',
  help: 'How long the oldest request of a batch waited in the queue before its batch started',
  labelNames: ['batch'],
  buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1],
  registers: [metricsRegistry],
});

const batchLane = new client.Histogram({
  name: 'fsapi_batch_lane_seconds',
  help: 'How long a batch held its lane: from its start to its commit and outcomes',
  labelNames: ['batch'],
  buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1],
  registers: [metricsRegistry],
});

const spareBatches = new client.Counter({
  name: 'fsapi_batch_spare_lane_starts_total',
  help: 'Batches started on a spare lane, beside a stalled batch',
  labelNames: ['batch'],
  registers: [metricsRegistry],
});

/**
 * Called by db/batcher.ts when it starts a batch: its size, how long its oldest request waited
 * for a lane, and whether it took a spare lane beside a stalled batch.
 */
export function observeBatchStart(size: number, waitedMs: number, spare: boolean, batch = 'transfers'): void {
  batchSize.observe({ batch }, size);
  batchWait.observe({ batch }, waitedMs / 1000);
  if (spare) spareBatches.inc({ batch });
}

/** Called by db/batcher.ts when a batch releases its lane, with how long it held it. */
export function observeBatchLane(heldMs: number, batch = 'transfers'): void {
  batchLane.observe({ batch }, heldMs / 1000);
}

export function observeJobTick(job: string, seconds: number, outcome: 'more' | 'idle' | 'failed'): void {
  jobTicks.inc({ job, outcome });
  jobDuration.observe({ job }, seconds);
}

/** Called by webhook delivery when an attempt ends; `createdAt` is the event's creation time. */
export function observeWebhookDelivery(createdAt: Date, ok: boolean, now = Date.now()): void {
  webhookLag.observe({ outcome: ok ? 'delivered' : 'failed' }, Math.max(0, (now - createdAt.getTime()) / 1000));
}

const logLinesDropped = new client.Counter({
  name: 'fsapi_log_lines_dropped_total',
  help: 'Process log lines dropped because standard output was not taking them (its buffer was full)',
  registers: [metricsRegistry],
});

/** Called by the process log's destination (lib/log-destination.ts) with the lines of each chunk it drops. */
export function countDroppedLogLines(lines: number): void {
  logLinesDropped.inc(lines);
}
