import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { pollUntil } from '../lib/poll.js';
import { HostSelector, connectSelected } from './hosts.js';

/**
 * PostgreSQL notifications (LISTEN/NOTIFY) for caches that must drop an entry in every process
 * as soon as the row behind it changes (the API key cache: a rotated key stops working
 * everywhere within a second). Triggers send the notifications (migration 0900), so every
 * writer — an API process, the dashboard, the operator CLI in another process — is covered.
 *
 * A cache trusts its entries only while `live` is true. Whenever notifications may have been
 * missed (the listener's connection dropped, or it has just (re)connected) every subscriber's
 * `onReset` runs, and the cache empties itself.
 */
export interface ChangeFeed {
  /** Whether notifications are arriving now. */
  readonly live: boolean;
  subscribe(channel: string, onMessage: (payload: string) => void, onReset: () => void): void;
  /** Resolves true once notifications arrive (false after `timeoutMs`): start-up logs and tests. */
  ready(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

interface Subscriber {
  channel: string;
  onMessage: (payload: string) => void;
  onReset: () => void;
}

export interface ListenerLog {
  warn(obj: object, msg: string): void;
}

/**
 * One dedicated connection per process that LISTENs; it reconnects on its own (backoff up to
 * 2 s) and checks itself with a heartbeat so a silently dead connection is noticed. LISTEN needs
 * a session: behind PgBouncer in transaction mode give it a direct URL (DATABASE_DIRECT_URL).
 */
export class PostgresChangeFeed implements ChangeFeed {
  private client: pg.Client | undefined;
  private subscribers: Subscriber[] = [];
  private connected = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private attempts = 0;
  private connecting: Promise<void> | undefined;
  /** Several hosts (src/db/hosts.ts): each reconnection goes to the one that satisfies the URL. */
  private readonly selector: HostSelector;

  constructor(
    url: string,
    private readonly log?: ListenerLog,
    private readonly heartbeatMs = 2000,
  ) {
    this.selector = new HostSelector(url);
  }

  get live(): boolean {
    return this.connected;
  }

  subscribe(channel: string, onMessage: (payload: string) => void, onReset: () => void): void {
    this.subscribers.push({ channel, onMessage, onReset });
    if (this.client && this.connected) {
      this.client.query(`listen ${quoteIdent(channel)}`).catch((err: unknown) => this.lost(err));
    } else if (!this.connecting && !this.timer) {
      this.connecting = this.connect();
    }
  }

  /** Resolves when the listener is connected (tests and start-up). */
  ready(timeoutMs = 5000): Promise<boolean> {
    return pollUntil(
      () => this.connected,
      timeoutMs,
      () => this.closed,
    );
  }

  private async connect(): Promise<void> {
    try {
      const client = await connectSelected(this.selector, { keepAlive: true, application_name: 'fsapi-listener' });
      this.client = client;
      client.on('error', (err) => this.lost(err));
      client.on('end', () => this.lost(new Error('listener connection ended')));
      client.on('notification', (msg) => {
        for (const s of this.subscribers) if (s.channel === msg.channel) s.onMessage(msg.payload ?? '');
      });
      if (this.closed) return void (await client.end().catch(() => {}));
      for (const channel of new Set(this.subscribers.map((s) => s.channel))) {
        await client.query(`listen ${quoteIdent(channel)}`);
      }
      if (this.closed || this.client !== client) return void (await client.end().catch(() => {}));
      this.connected = true;
      this.attempts = 0;
      // Anything cached before this moment may have changed unseen.
      for (const s of this.subscribers) s.onReset();
      this.heartbeat = setInterval(() => {
        client.query('select 1').catch((err: unknown) => this.lost(err));
      }, this.heartbeatMs);
      this.heartbeat.unref();
    } catch (err) {
      this.lost(err);
    } finally {
      this.connecting = undefined;
    }
  }

  private lost(err: unknown) {
    const wasConnected = this.connected;
    this.connected = false;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    const client = this.client;
    this.client = undefined;
    client?.removeAllListeners('end');
    client?.end().catch(() => {});
    if (wasConnected) for (const s of this.subscribers) s.onReset();
    if (this.closed || this.timer) return;
    if (this.attempts++ === 0) this.log?.warn({ err }, 'change listener disconnected; reconnecting (caches bypassed meanwhile)');
    const delay = Math.min(100 * 2 ** Math.min(this.attempts, 5), 2000);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.closed) this.connecting = this.connect();
    }, delay);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.connected = false;
    if (this.timer) clearTimeout(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    await this.connecting?.catch(() => {});
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}

/**
 * PGlite is one process with one session: it hears its own NOTIFYs at commit. LISTEN runs
 * through the dialect's single connection so it never lands inside someone else's transaction.
 */
export class PGliteChangeFeed implements ChangeFeed {
  private listening = 0;
  private readonly unlisteners: Array<() => Promise<void>> = [];
  private closed = false;

  constructor(
    private readonly pglite: PGlite,
    /** The Kysely instance over this PGlite (its single connection is taken for LISTEN). */
    private readonly db: ExclusiveConnection,
  ) {}

  get live(): boolean {
    return this.listening > 0 && !this.closed;
  }

  subscribe(channel: string, onMessage: (payload: string) => void, onReset: () => void): void {
    void this.db
      .connection()
      .execute(async () => {
        const stop = await this.pglite.listen(channel, onMessage);
        this.unlisteners.push(() => stop());
        this.listening++;
        onReset();
      })
      .catch(() => {});
  }

  ready(timeoutMs = 5000): Promise<boolean> {
    return pollUntil(
      () => this.live,
      timeoutMs,
      () => this.closed,
      5,
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const stop of this.unlisteners.splice(0)) await stop().catch(() => {});
  }
}

interface ExclusiveConnection {
  connection(): { execute<T>(callback: () => Promise<T>): Promise<T> };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
