import pg from 'pg';

/**
 * Connection strings with several hosts, with libpq's meaning:
 * `postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write` (what `pg_autoctl show uri`
 * prints). node-postgres takes one host only, so the choice of host happens here, at the pool's
 * connect step: a new connection goes to the host that last passed the check, and a host that
 * refuses or has the wrong role sends the next attempt to the next host in the list. The chosen
 * host is cached; an error that says it stopped being the primary (read-only transaction, the
 * connection gone) makes every connection check again on its next checkout.
 */
export type SessionAttrs = 'any' | 'read-write' | 'read-only' | 'primary' | 'standby' | 'prefer-standby';
const ATTRS: readonly SessionAttrs[] = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'];

export interface Target {
  host: string;
  port: number;
  /** A single-host connection string for this host (what pg.Client is given). */
  url: string;
}

export interface MultiHostUrl {
  targets: Target[];
  attrs: SessionAttrs;
}

/** Parses a libpq-style URL with one or more `host[:port]` entries separated by commas. */
export function parseMultiHostUrl(url: string): MultiHostUrl {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/i.exec(url);
  if (!m) return { targets: [{ host: '', port: 5432, url }], attrs: 'any' };
  const [, scheme, auth = '', hostList = '', rest = ''] = m;
  let attrs: SessionAttrs = 'any';
  let tail = rest;
  const q = rest.indexOf('?');
  if (q >= 0) {
    const params = new URLSearchParams(rest.slice(q + 1));
    const given = params.get('target_session_attrs');
    if (given !== null) {
      if (!ATTRS.includes(given as SessionAttrs)) {
        throw new Error(`target_session_attrs=${given} is not one of ${ATTRS.join(', ')}`);
      }
      attrs = given as SessionAttrs;
      params.delete('target_session_attrs');
    }
    const left = params.toString();
    tail = rest.slice(0, q) + (left ? `?${left}` : '');
  }
  const entries = hostList.split(',').filter((h) => h.length > 0);
  if (entries.length === 0) entries.push('');
  const targets = entries.map((entry) => {
    const hp = /^(\[[^\]]+\]|[^:]*)(?::(\d+))?$/.exec(entry);
    const host = hp?.[1] ?? entry;
    const port = hp?.[2] ? Number(hp[2]) : 5432;
    return { host: host.replace(/^\[|\]$/g, ''), port, url: `${scheme}${auth}${host}${hp?.[2] ? `:${port}` : ''}${tail}` };
  });
  return { targets, attrs };
}

/** What a server says about itself, enough to judge every target_session_attrs. */
export interface ServerRole {
  inRecovery: boolean;
  readOnly: boolean;
}

export async function serverRole(client: { query(text: string): Promise<{ rows: unknown[] }> }): Promise<ServerRole> {
  const { rows } = await client.query("select pg_is_in_recovery() as in_recovery, current_setting('transaction_read_only') as read_only");
  const row = rows[0] as { in_recovery: boolean; read_only: string };
  return { inRecovery: row.in_recovery, readOnly: row.read_only === 'on' };
}

/** Whether a server with this role is acceptable; `strict` false is prefer-standby's second pass. */
export function acceptable(attrs: SessionAttrs, role: ServerRole, strict = true): boolean {
  switch (attrs) {
    case 'any':
      return true;
    case 'read-write':
      return !role.readOnly;
    case 'read-only':
      return role.readOnly;
    case 'primary':
      return !role.inRecovery;
    case 'standby':
      return role.inRecovery;
    case 'prefer-standby':
      return strict ? role.inRecovery : true;
  }
}

/** A connection refused on the grounds of its server's role: the next host is tried. */
export class WrongRole extends Error {
  readonly code = '08001';
  constructor(target: Target, attrs: SessionAttrs) {
    super(`server at ${target.host}:${target.port} does not satisfy target_session_attrs=${attrs}`);
  }
}

/**
 * The hosts of one connection string and the one in use. `generation` counts the times the
 * choice was put in doubt; a pooled connection checked under an older generation is checked again.
 */
export class HostSelector {
  readonly targets: Target[];
  readonly attrs: SessionAttrs;
  private index = 0;
  generation = 0;
  /** prefer-standby: after a full round without a standby, any server is taken until the next doubt. */
  private relaxed = false;
  private failuresThisRound = 0;
  /** When the host in use was last confirmed (ms since epoch), for /metrics. */
  confirmedAt = 0;

  constructor(url: string) {
    const parsed = parseMultiHostUrl(url);
    this.targets = parsed.targets;
    this.attrs = parsed.attrs;
  }

  /** One host and no role asked for: nothing to choose or check (a plain connection string). */
  get trivial(): boolean {
    return this.targets.length === 1 && this.attrs === 'any';
  }

  current(): Target {
    return this.targets[this.index]!;
  }

  /** `host:port` of the host in use. */
  get label(): string {
    const t = this.current();
    return `${t.host}:${t.port}`;
  }

  /** The connection to `target` failed or its server has the wrong role: move on to the next host. */
  advance(target: Target): void {
    if (this.current() !== target) return; // another connection moved on already
    this.index = (this.index + 1) % this.targets.length;
    this.failuresThisRound++;
    if (this.failuresThisRound >= this.targets.length && this.attrs === 'prefer-standby') this.relaxed = true;
  }

  /** Whether a full round over the hosts failed since the last success (the caller then waits). */
  get roundFailed(): boolean {
    return this.failuresThisRound >= this.targets.length;
  }

  confirmed(target: Target): void {
    if (this.current() === target) {
      this.failuresThisRound = 0;
      this.confirmedAt = Date.now();
    }
  }

  /** The server in use may no longer be what was asked for (a failover): every connection checks again. */
  doubt(): void {
    this.generation++;
    this.relaxed = false;
  }

  accepts(role: ServerRole): boolean {
    return acceptable(this.attrs, role, !this.relaxed);
  }

  /** Waits for the round of failures to be forgotten (the caller's backoff), then starts a new round. */
  newRound(): void {
    this.failuresThisRound = 0;
  }
}

/**
 * The pg.Client for a pool over `selector`: each new connection goes to the host in use at that
 * moment, and gives up on a host that has not answered within `connectTimeoutMs` (the client's
 * own timeout: the pool's would also bound the wait for a busy pool's free connection).
 */
export function clientClass(selector: HostSelector, connectTimeoutMs: number): typeof pg.Client {
  /** A connection that could not be made: the next host is tried, and the error reads as 08001 above. */
  const failed = (target: Target, err: unknown) => {
    selector.advance(target);
    const e = err as { code?: unknown } | null;
    if (e && typeof e === 'object' && e.code === undefined) {
      try {
        e.code = '08001';
      } catch {
        /* frozen error object: left as it is */
      }
    }
    return err;
  };
  return class SelectedClient extends pg.Client {
    readonly target: Target;
    constructor(config?: pg.ClientConfig) {
      const target = selector.current();
      super({ ...config, connectionString: target.url, connectionTimeoutMillis: connectTimeoutMs });
      this.target = target;
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: (err: Error) => void): void;
    override connect(callback?: (err: Error) => void): Promise<pg.Client> | void {
      if (callback) {
        return super.connect((err: Error) => callback(err ? (failed(this.target, err) as Error) : err));
      }
      return super.connect().catch((err: unknown) => Promise.reject(failed(this.target, err)));
    }
  } as unknown as typeof pg.Client;
}

export function targetOf(client: unknown): Target | undefined {
  return (client as { target?: Target }).target;
}

/**
 * One connection to a host that satisfies the selector (the LISTEN connection, tools): tries
 * the hosts in order once, starting at the one in use.
 */
export async function connectSelected(selector: HostSelector, config: Omit<pg.ClientConfig, 'connectionString'>): Promise<pg.Client> {
  let lastError: unknown;
  for (let i = 0; i < selector.targets.length; i++) {
    const target = selector.current();
    const client = new pg.Client({ ...config, connectionString: target.url });
    client.on('error', () => {});
    try {
      await client.connect();
      if (selector.trivial || selector.accepts(await serverRole(client))) {
        selector.confirmed(target);
        client.removeAllListeners('error');
        return client;
      }
      lastError = new WrongRole(target, selector.attrs);
    } catch (err) {
      lastError = err;
    }
    await client.end().catch(() => {});
    selector.advance(target);
  }
  selector.newRound();
  throw lastError;
}
