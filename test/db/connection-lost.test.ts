import { createServer, connect, type Server, type Socket } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type DatabaseHandle } from '../../src/db/client.js';
import { registerErrorHandling } from '../../src/http/envelope.js';
import { cloneTemplateDatabase, openTestDatabase } from '../harness.js';
import { freePort } from '../server-process.js';

/**
 * Every driver error that means the database is not there for this request (the socket broke,
 * the server shut down or is not the primary) is a 503 with Retry-After, never a 500. The
 * socket is broken for real under a request by a TCP relay between the pool and PostgreSQL.
 */
const onPostgres = Boolean(process.env.DATABASE_URL);

function appWith(routes: Record<string, () => Promise<unknown>>): FastifyInstance {
  const app = Fastify({ logger: false });
  registerErrorHandling(app);
  app.get('/probe/:name', async (req) => {
    await routes[(req.params as { name: string }).name]!();
    return { ok: true };
  });
  return app;
}

describe('errors that mean the database is gone', () => {
  let handle: DatabaseHandle;
  let app: FastifyInstance;
  const driverError = (props: Record<string, unknown>) => () =>
    Promise.reject(Object.assign(new Error(String(props.message ?? 'x')), props));

  beforeAll(async () => {
    handle = await openTestDatabase({ migrated: false });
    await sql`create table lost_probe (id int primary key)`.execute(handle.db);
    app = appWith({
      // A write in a read-only transaction: what a server answers once it is a standby.
      readonly: () =>
        handle.db.transaction().execute(async (trx) => {
          await sql`set transaction read only`.execute(trx);
          await sql`insert into lost_probe values (1)`.execute(trx);
        }),
      epipe: driverError({ code: 'EPIPE', message: 'write EPIPE', errno: -32, syscall: 'write' }),
      econnreset: driverError({ code: 'ECONNRESET', message: 'read ECONNRESET' }),
      '57P01': driverError({ code: '57P01', message: 'terminating connection due to administrator command' }),
      '57P02': driverError({ code: '57P02', message: 'terminating connection due to crash of another server process' }),
      '57P03': driverError({ code: '57P03', message: 'the database system is starting up' }),
      '08P01': driverError({ code: '08P01', message: 'protocol violation' }),
      '08006': driverError({ code: '08006', message: 'connection failure' }),
      other: driverError({ code: '42P01', message: 'relation does not exist' }),
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await handle?.close();
  });

  it('a write on a server that turned read-only (25006) is 503 with Retry-After', async () => {
    const res = await app.inject({ method: 'GET', url: '/probe/readonly' });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.json().error.code).toBe('service_unavailable');
  });

  it.each(['epipe', 'econnreset', '57P01', '57P02', '57P03', '08P01', '08006'])('%s is 503 with Retry-After', async (name) => {
    const res = await app.inject({ method: 'GET', url: `/probe/${name}` });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
  });

  it('an error of our own (42P01) stays a 500', async () => {
    expect((await app.inject({ method: 'GET', url: '/probe/other' })).statusCode).toBe(500);
  });
});

/** A TCP relay to PostgreSQL whose connections the test can cut. */
async function relay(target: { host: string; port: number }): Promise<{ port: number; cut: () => void; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((inbound) => {
    const outbound = connect(target.port, target.host);
    sockets.add(inbound).add(outbound);
    inbound.pipe(outbound).pipe(inbound);
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
      sockets.delete(inbound);
      sockets.delete(outbound);
    };
    inbound.on('error', drop).on('close', drop);
    outbound.on('error', drop).on('close', drop);
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return {
    port,
    cut: () => {
      for (const s of sockets) s.resetAndDestroy();
      sockets.clear();
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe.skipIf(!onPostgres)('a socket broken under a request (PostgreSQL)', () => {
  let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
  let proxy: Awaited<ReturnType<typeof relay>>;
  let handle: DatabaseHandle;
  let app: FastifyInstance;

  beforeAll(async () => {
    clone = await cloneTemplateDatabase(process.env.DATABASE_URL!, 'template1');
    const u = new URL(clone.url);
    proxy = await relay({ host: u.hostname, port: Number(u.port || 5432) });
    u.port = String(proxy.port);
    handle = openPostgres(u.toString(), 4);
    await sql`create table lost_probe (id serial primary key, at timestamptz default now())`.execute(handle.db);
    app = appWith({
      slow: () => sql`select pg_sleep(5)`.execute(handle.db),
      write: () => handle.db.transaction().execute((trx) => sql`insert into lost_probe default values`.execute(trx)),
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await handle?.close();
    await proxy?.close();
    await clone?.drop();
  });

  it('a query whose connection is reset mid-flight is 503 with Retry-After, and the next request works', async () => {
    const pending = app.inject({ method: 'GET', url: '/probe/slow' });
    await new Promise((r) => setTimeout(r, 300));
    proxy.cut();
    const res = await pending;
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers['retry-after']).toBeDefined();
    const after = await app.inject({ method: 'GET', url: '/probe/write' });
    expect(after.statusCode, after.body).toBe(200);
  });

  it('writes on pooled connections cut while idle are never a 500', async () => {
    // Fill the pool with connections, then cut them all while they sit idle.
    await Promise.all(Array.from({ length: 4 }, () => app.inject({ method: 'GET', url: '/probe/write' })));
    proxy.cut();
    const statuses = (await Promise.all(Array.from({ length: 8 }, () => app.inject({ method: 'GET', url: '/probe/write' })))).map(
      (r) => r.statusCode,
    );
    expect(
      statuses.every((s) => s === 200 || s === 503),
      statuses.join(','),
    ).toBe(true);
    expect((await app.inject({ method: 'GET', url: '/probe/write' })).statusCode).toBe(200);
  });
});

describe.skipIf(!onPostgres)('several hosts in DATABASE_URL (libpq target_session_attrs)', () => {
  let clone: Awaited<ReturnType<typeof cloneTemplateDatabase>>;
  let dead: number;
  let live: string;
  let path: string;
  beforeAll(async () => {
    clone = await cloneTemplateDatabase(process.env.DATABASE_URL!, 'template1');
    const u = new URL(clone.url);
    dead = await freePort(); // nothing listens there
    live = `${u.hostname}:${u.port || 5432}`;
    path = `${u.username ? `${u.username}${u.password ? `:${u.password}` : ''}@` : ''}`;
  });
  afterAll(async () => clone?.drop());
  const urlWith = (hosts: string, attrs: string) => {
    const u = new URL(clone.url);
    return `postgres://${path}${hosts}${u.pathname}?target_session_attrs=${attrs}`;
  };

  it('read-write skips a host that is down and names the one in use', async () => {
    const handle = openPostgres(urlWith(`127.0.0.1:${dead},${live}`, 'read-write'), 2);
    try {
      const { rows } = await sql<{ ok: number }>`select 1 as ok`.execute(handle.db);
      expect(rows[0]!.ok).toBe(1);
      expect(handle.primaryInUse?.()).toBe(live);
      // The LISTEN connection follows the same hosts.
      handle.changes!.subscribe(
        'fsapi_probe',
        () => {},
        () => {},
      );
      expect(await handle.changes!.ready(5000)).toBe(true);
    } finally {
      await handle.close();
    }
  });

  it('a host that accepts the connection but never answers is left after the connect timeout', async () => {
    const held: Socket[] = [];
    const silent = createServer((socket) => void held.push(socket)); // takes the TCP connection, never speaks
    const port = await freePort();
    await new Promise<void>((r) => silent.listen(port, '127.0.0.1', r));
    const handle = openPostgres(urlWith(`127.0.0.1:${port},${live}`, 'read-write'), 2);
    try {
      const started = Date.now();
      const { rows } = await sql<{ ok: number }>`select 1 as ok`.execute(handle.db);
      expect(rows[0]!.ok).toBe(1);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(handle.primaryInUse?.()).toBe(live);
    } finally {
      await handle.close();
      for (const socket of held) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it('standby with only a primary fails as unavailable (503), prefer-standby takes the primary', async () => {
    const strict = openPostgres(urlWith(live, 'standby'), 2);
    try {
      const err = await sql`select 1`.execute(strict.db).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe('08001');
    } finally {
      await strict.close();
    }
    const relaxed = openPostgres(urlWith(`127.0.0.1:${dead},${live}`, 'prefer-standby'), 2);
    try {
      const { rows } = await sql<{ r: boolean }>`select pg_is_in_recovery() as r`.execute(relaxed.db);
      expect(rows[0]!.r).toBe(false);
    } finally {
      await relaxed.close();
    }
  });

  it('a primary that turns read-only is left: requests get 503 (never 500) until it is writable again', async () => {
    const db = new URL(clone.url).pathname.slice(1);
    const handle = openPostgres(urlWith(live, 'read-write'), 2);
    const admin = new pg.Client({ connectionString: clone.url });
    await admin.connect();
    try {
      await sql`select 1`.execute(handle.db);
      await admin.query(`alter database ${db} set default_transaction_read_only = on`);
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`, [db]);
      const err = await sql`select 1`.execute(handle.db).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toMatch(/^(08|57P0)/);
      await admin.query(`alter database ${db} set default_transaction_read_only = off`);
      const { rows } = await sql<{ ok: number }>`select 1 as ok`.execute(handle.db);
      expect(rows[0]!.ok).toBe(1);
    } finally {
      await admin.end();
      await handle.close();
    }
  });
});
