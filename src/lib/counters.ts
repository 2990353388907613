import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import { pollUntil } from './poll.js';

/**
 * Counters that rate limits and login limits keep. Two kinds of count, each one round trip:
 * - a fixed window (`hit`): how many hits a key had in the window that `now` falls in;
 * - a sliding log of failures (`fail`, `failures`, `reset`): the times of the last `max` failures.
 *
 * `MemoryCounters` keeps them in this process (each API process counts on its own).
 * `SharedCounters` keeps them in Redis so every process shares them; when Redis cannot answer
 * (down, slow, not yet connected) it counts in this process's memory instead and logs the switch,
 * so a Redis outage degrades the limits to per process and never fails a request.
 */
export interface Counters {
  /** Whether counts are shared between processes right now. */
  readonly shared: boolean;
  /** Adds a hit to `key` in the fixed window of `windowMs` containing `now`; returns the window's count. */
  hit(key: string, windowMs: number, now?: number): Promise<number>;
  /** Records a failure of `key` at `now`, keeping the last `max` within `windowMs`. */
  fail(key: string, max: number, windowMs: number, now?: number): Promise<void>;
  /** Failures of `key` within `windowMs` before `now`: their count and the oldest one's time. */
  failures(key: string, windowMs: number, now?: number): Promise<{ count: number; oldest: number | null }>;
  reset(key: string): Promise<void>;
  /** Resolves once counts are shared (true at once for memory; false if Redis is not up in time). */
  ready(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

const MEMORY_MAX_KEYS = 100_000;

export class MemoryCounters implements Counters {
  readonly shared = false;
  private readonly windows = new Map<string, { start: number; count: number }>();
  private readonly logs = new Map<string, number[]>();

  async hit(key: string, windowMs: number, now = Date.now()): Promise<number> {
    return this.hitSync(key, windowMs, now);
  }

  hitSync(key: string, windowMs: number, now = Date.now()): number {
    const start = Math.floor(now / windowMs) * windowMs;
    const entry = this.windows.get(key);
    if (entry && entry.start === start) return ++entry.count;
    if (this.windows.size >= MEMORY_MAX_KEYS) this.prune(now, windowMs);
    this.windows.set(key, { start, count: 1 });
    return 1;
  }

  async fail(key: string, max: number, windowMs: number, now = Date.now()): Promise<void> {
    this.failSync(key, max, windowMs, now);
  }

  failSync(key: string, max: number, windowMs: number, now = Date.now()): void {
    if (this.logs.size >= MEMORY_MAX_KEYS) this.logs.clear(); // bounded memory under a flood
    this.logs.set(key, [...this.recent(key, windowMs, now), now].slice(-max));
  }

  async failures(key: string, windowMs: number, now = Date.now()) {
    return this.failuresSync(key, windowMs, now);
  }

  failuresSync(key: string, windowMs: number, now = Date.now()) {
    const list = this.recent(key, windowMs, now);
    return { count: list.length, oldest: list[0] ?? null };
  }

  async reset(key: string): Promise<void> {
    this.logs.delete(key);
  }

  async ready(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}

  private recent(key: string, windowMs: number, now: number): number[] {
    const list = (this.logs.get(key) ?? []).filter((t) => now - t < windowMs);
    if (list.length === 0) this.logs.delete(key);
    else this.logs.set(key, list);
    return list;
  }

  private prune(now: number, windowMs: number) {
    for (const [k, v] of this.windows) if (v.start + windowMs <= now) this.windows.delete(k);
    if (this.windows.size >= MEMORY_MAX_KEYS) this.windows.clear();
  }
}

/** INCR and, on the window's first hit, PEXPIRE: one round trip, atomic. */
const HIT_SCRIPT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

/** Drop failures older than the window, add this one, keep the newest ARGV[3], expire with the window. */
const FAIL_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (tonumber(ARGV[1]) - tonumber(ARGV[2]) + 1))
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[3]) + 1))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

/** Count of failures within the window and the oldest one's time. */
const FAILURES_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (tonumber(ARGV[1]) - tonumber(ARGV[2]) + 1))
local n = redis.call('ZCARD', KEYS[1])
if n == 0 then return {0, false} end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {n, oldest[2]}`;

export interface CounterLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface SharedCountersOptions {
  url: string;
  /** Prefix of every key this program writes (several deployments or tests share one Redis). */
  prefix?: string;
  /** A command slower than this counts locally instead (the request does not wait on Redis). */
  commandTimeoutMs?: number;
  log?: CounterLog;
}

type ScriptedRedis = Redis & {
  fsHit(key: string, windowMs: number): Promise<number>;
  fsFail(key: string, now: number, windowMs: number, max: number, member: string): Promise<number>;
  fsFailures(key: string, now: number, windowMs: number): Promise<[number, string | null]>;
};

export class SharedCounters implements Counters {
  private readonly redis: ScriptedRedis;
  private readonly local = new MemoryCounters();
  private readonly prefix: string;
  private readonly log: CounterLog | undefined;
  private degraded = false;
  private closed = false;

  constructor(options: SharedCountersOptions) {
    this.prefix = options.prefix ?? 'fsapi:';
    this.log = options.log;
    // Loaded here: only a process given REDIS_URL needs ioredis.
    const { Redis: RedisClient } = createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
    const redis = new RedisClient(options.url, {
      // Never queue a command while disconnected: count locally instead, at once.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 250,
      connectTimeout: 2000,
      retryStrategy: (times) => Math.min(200 * times, 2000),
      lazyConnect: false,
    });
    redis.on('error', () => {}); // reported through `degrade` when a command falls back
    redis.on('ready', () => {
      if (this.degraded) this.log?.info({}, 'Redis is back: rate and login limits are shared again');
      this.degraded = false;
    });
    redis.defineCommand('fsHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    redis.defineCommand('fsFail', { numberOfKeys: 1, lua: FAIL_SCRIPT });
    redis.defineCommand('fsFailures', { numberOfKeys: 1, lua: FAILURES_SCRIPT });
    this.redis = redis as ScriptedRedis;
  }

  get shared(): boolean {
    return this.redis.status === 'ready' && !this.degraded;
  }

  /** Resolves once connected (or rejects after `timeoutMs`): for start-up logs and tests. */
  ready(timeoutMs = 2000): Promise<boolean> {
    return pollUntil(
      () => this.redis.status === 'ready',
      timeoutMs,
      () => this.closed,
      20,
    );
  }

  private degrade(err: unknown) {
    if (!this.degraded) {
      this.degraded = true;
      this.log?.warn({ err }, 'Redis unavailable: rate and login limits count in this process until it is back');
    }
  }

  private async shared_<T>(run: () => Promise<T>, fallback: () => T): Promise<T> {
    if (this.redis.status !== 'ready') {
      this.degrade(new Error(`Redis connection is ${this.redis.status}`));
      return fallback();
    }
    try {
      const result = await run();
      this.degraded = false;
      return result;
    } catch (err) {
      this.degrade(err);
      return fallback();
    }
  }

  hit(key: string, windowMs: number, now = Date.now()): Promise<number> {
    const start = Math.floor(now / windowMs) * windowMs;
    return this.shared_(
      async () => Number(await this.redis.fsHit(`${this.prefix}w:${key}:${start}`, windowMs + 1000)),
      () => this.local.hitSync(key, windowMs, now),
    );
  }

  fail(key: string, max: number, windowMs: number, now = Date.now()): Promise<void> {
    const member = `${now}:${randomBytes(6).toString('hex')}`;
    return this.shared_(
      async () => void (await this.redis.fsFail(`${this.prefix}f:${key}`, now, windowMs, max, member)),
      () => this.local.failSync(key, max, windowMs, now),
    );
  }

  failures(key: string, windowMs: number, now = Date.now()) {
    return this.shared_(
      async () => {
        const [count, oldest] = await this.redis.fsFailures(`${this.prefix}f:${key}`, now, windowMs);
        return { count: Number(count), oldest: oldest === null ? null : Number(oldest) };
      },
      () => this.local.failuresSync(key, windowMs, now),
    );
  }

  reset(key: string): Promise<void> {
    void this.local.reset(key);
    return this.shared_(
      async () => void (await this.redis.del(`${this.prefix}f:${key}`)),
      () => undefined,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.redis.disconnect();
  }
}

/** Redis-backed when `REDIS_URL` is set, else this process's memory. */
export function openCounters(config: { REDIS_URL?: string; REDIS_KEY_PREFIX: string }, log?: CounterLog): Counters {
  return config.REDIS_URL
    ? new SharedCounters({ url: config.REDIS_URL, prefix: config.REDIS_KEY_PREFIX, ...(log ? { log } : {}) })
    : new MemoryCounters();
}
