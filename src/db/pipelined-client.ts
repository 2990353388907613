import type { PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { isDatabaseUnavailable, isNotPrimary } from './errors.js';
import type { HostSelector } from './hosts.js';
import { isStalePlan } from './retry.js';

/** Messages pg gives a connection that died, without a SQLSTATE or errno of their own. */
const CONNECTION_LOST = /^(Connection terminated|Client has encountered a connection error|Client was closed|Connection closed)/;
/**
 * A connection lost mid-request gets SQLSTATE 08006 (connection_failure), so every layer above
 * classifies it like the server's own connection errors (the HTTP layer answers 503).
 */
export function tagConnectionError(err: unknown): unknown {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e && typeof e === 'object' && e.code === undefined && typeof e.message === 'string' && CONNECTION_LOST.test(e.message)) {
    try {
      e.code = '08006';
    } catch {
      /* frozen error object: left as it is */
    }
  }
  return err;
}

/**
 * Named prepared statements of one connection: statement text → name. PostgreSQL parses and plans
 * an unnamed statement on every call (for the account read, planning costs more than running it);
 * a named one is parsed once per connection and, after a few calls, runs on a cached plan.
 * A text is prepared the second time it is seen: a batch's multi-row statements have one text per
 * shape, and most shapes never come back. The least recently used beyond `max` are deallocated.
 */
export class PreparedNames {
  private readonly names = new Map<string, string>();
  /** The row shape of each named statement's answer, once seen (namedQuery below). */
  readonly shapes = new Map<string, RowShape>();
  /** Texts seen once (cleared when full: it only delays a preparation). */
  private readonly seen = new Set<string>();
  private next = 0;

  constructor(
    private readonly deallocate: (name: string) => void,
    private readonly max = 200,
  ) {}

  /** The statement's name, or undefined: send it unnamed. */
  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name !== undefined) {
      this.names.delete(text); // re-inserted: the Map's order is the recency order
      this.names.set(text, name);
      return name;
    }
    if (!this.seen.has(text)) {
      if (this.seen.size >= this.max * 5) this.seen.clear();
      this.seen.add(text);
      return undefined;
    }
    this.seen.delete(text);
    name = `fsapi_${this.next++}`; // never reused: pg remembers every name it has parsed
    this.names.set(text, name);
    if (this.names.size > this.max) {
      const [oldest, oldName] = this.names.entries().next().value!;
      this.names.delete(oldest);
      this.shapes.delete(oldName);
      this.deallocate(oldName);
    }
    return name;
  }

  /** Forgets every name (their statements stay until the connection ends): the next calls prepare anew. */
  reset(): void {
    this.names.clear();
    this.shapes.clear();
  }
}

/** The socket under a pg client (pg's own Query corks it around each statement's messages). */
function socketOf(client: pg.PoolClient): { cork(): void; uncork(): void } | undefined {
  const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
  return stream?.cork && stream.uncork ? (stream as { cork(): void; uncork(): void }) : undefined;
}

/** Corks the socket at a run's first statement and uncorks it once that synchronous run is over. */
function corkPerRun(socket: { cork(): void; uncork(): void } | undefined): () => void {
  let corked = false;
  return () => {
    if (!socket || corked) return;
    corked = true;
    socket.cork();
    queueMicrotask(() => {
      corked = false;
      socket.uncork();
    });
  };
}

/** What pg's result builder makes of a row description: a parser per column, and the empty row each row is copied from. */
interface RowShape {
  parsers: unknown[];
  row: Record<string, null>;
}

/** The parts of pg's result builder (`pg/lib/result.js`) that a row description sets. */
interface ResultBuilder {
  fields: pg.FieldDef[];
  _parsers: unknown[];
  _prebuiltEmptyResultObject: Record<string, null>;
  addFields(fields: pg.FieldDef[]): void;
}

/**
 * A named prepared statement's call. pg copies a query given as a config object, property
 * descriptors and all, before every call; given as a text it copies nothing, so the query is made
 * from its text and values and named afterwards (what pg reads its name from when it sends it).
 *
 * pg also rebuilds, at every answer's row description, a type parser per column and the empty row
 * each row is copied from (a prototype-less object filled key by key). A named statement's columns
 * never change (PostgreSQL refuses to run it if they would, and db/retry.ts prepares it anew under
 * a new name), so what its first answer's description built is kept, and its later answers reuse it.
 */
function namedQuery(client: pg.PoolClient, named: PreparedNames, name: string, text: string, values: unknown[]): Promise<pg.QueryResult> {
  return new Promise((resolve, reject) => {
    const query = new pg.Query(text, values, (err: Error | undefined, result: unknown) =>
      err ? reject(err) : resolve(result as pg.QueryResult),
    );
    (query as pg.Query & { name: string }).name = name;
    const result = (query as unknown as { _result: ResultBuilder })._result;
    const own = result.addFields;
    result.addFields = function (this: ResultBuilder, fields: pg.FieldDef[]) {
      const known = named.shapes.get(name);
      if (known && known.parsers.length === fields.length) {
        this.fields = fields;
        this._parsers = known.parsers;
        this._prebuiltEmptyResultObject = known.row;
        return;
      }
      own.call(this, fields);
      if (fields.length > 0) named.shapes.set(name, { parsers: this._parsers, row: this._prebuiltEmptyResultObject });
    };
    client.query(query);
  });
}

/** A statement's failure, tagged, after what it tells about the connection's prepared names and its host. */
function failureOf(err: unknown, named: PreparedNames | null, selector: HostSelector): unknown {
  // A table changed under a cached plan (a migration by a newer process): prepare anew;
  // the entry point's retry runs the rolled-back unit again (db/retry.ts).
  if (isStalePlan(err)) named?.reset();
  const tagged = tagConnectionError(err);
  // The host may have stopped being the primary (a failover): every connection checks again.
  if (isNotPrimary(tagged) || isDatabaseUnavailable(tagged)) selector.doubt();
  return tagged;
}

/**
 * A pg client as Kysely sees it, pipelined: BEGIN leaves with the transaction's first statement,
 * statements issued in one synchronous run leave in one write, named prepared statements for the
 * texts that come back (PreparedNames), and every failure tagged (tagConnectionError) and told to
 * the host selector when the host may have stopped being the primary.
 */
export function pipelinedClient(client: pg.PoolClient, prepared: boolean, selector: HostSelector): PostgresPoolClient {
  // A DEALLOCATE that fails (an aborted transaction) leaves the statement until the connection ends: harmless.
  const named = prepared ? new PreparedNames((name) => void client.query(`deallocate ${name}`).catch(() => {})) : null;
  // A BEGIN sent but not yet answered (see below): the next statement reports its failure.
  let beginning: Promise<unknown> | undefined;
  const socket = socketOf(client);
  // Statements issued in one synchronous run (a batch's first locks, db/pipeline.ts) leave in
  // one write: the socket is corked at the first and uncorked once that run is over (a
  // microtask), not written once per statement (pg corks each statement's own messages only).
  // Uncorking in process.nextTick instead (after every promise callback queued meanwhile) also
  // sent a batch's write statement with its COMMIT, one write less per batch, but held every
  // statement behind the other requests' callbacks: no faster, and a worse tail latency
  // (docs/benchmarks.md#the-figures-behind-the-defaults).
  const corkThisRun = corkPerRun(socket);
  const send = (args: [string, unknown[]], begun: Promise<unknown> | undefined) => {
    corkThisRun();
    // Statements with parameters only: BEGIN, COMMIT and migrations' scripts stay simple queries.
    const name = named && typeof args[0] === 'string' && Array.isArray(args[1]) && args[1].length > 0 ? named.nameOf(args[0]) : undefined;
    const result =
      name && named ? namedQuery(client, named, name, args[0], args[1]) : (client.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) {
      const answered = result.catch((err: unknown) => Promise.reject(failureOf(err, named, selector)));
      return begun ? Promise.all([begun, answered]).then(([, r]) => r) : answered;
    }
    return result; // a cursor (streamed query): its reads reject on their own
  };
  return {
    query: ((...args: [string, unknown[]]) => {
      // BEGIN goes on the wire with the transaction's first statement and is answered as done
      // at once: the connection is pipelined, so that statement does not wait for BEGIN's
      // answer, and a transaction costs one round trip less. The socket is corked in between,
      // so both leave in one write (one system call and one wake-up of the server, not two).
      // Nothing can run between the two, and should BEGIN fail, that statement fails with
      // BEGIN's error.
      if (args[0] === 'begin') {
        socket?.cork();
        beginning = client.query('begin').catch((err: unknown) => Promise.reject(tagConnectionError(err)));
        beginning.catch(() => {}); // reported by the next statement
        return Promise.resolve({ command: 'BEGIN', rowCount: null, rows: [] });
      }
      const begun = beginning;
      beginning = undefined;
      try {
        return send(args, begun);
      } finally {
        if (begun) socket?.uncork();
      }
    }) as PostgresPoolClient['query'],
    release: () => client.release(),
  };
}
