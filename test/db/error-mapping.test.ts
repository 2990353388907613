import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerErrorHandling } from '../../src/http/envelope.js';
import { openTestDatabase } from '../harness.js';
import type { DatabaseHandle } from '../../src/db/client.js';

/**
 * Issue #15: a database error a client can cause (a value the column type refuses, a duplicate)
 * is a 4xx in the envelope; anything else is a 500 whose request id is logged with the cause.
 * Real errors from the real database (PostgreSQL or PGlite) go through the real error handler.
 */
let handle: DatabaseHandle;
let app: FastifyInstance;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  handle = await openTestDatabase();
  await sql`create table mapping_probe (id int primary key)`.execute(handle.db);
  await sql`insert into mapping_probe values (1)`.execute(handle.db);
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      cb();
    },
  });
  app = Fastify({ logger: { level: 'error', stream }, genReqId: (req) => String(req.headers['x-request-id'] ?? 'generated') });
  registerErrorHandling(app);
  const statements: Record<string, () => Promise<unknown>> = {
    uuid: () => sql`select ${'not-a-uuid'}::uuid`.execute(handle.db), // 22P02
    range: () => sql`select ${'99999999999'}::int4`.execute(handle.db), // 22003
    nul: () => sql`select convert_from('\\x610062'::bytea, 'UTF8')`.execute(handle.db), // 22021
    duplicate: () => sql`insert into mapping_probe values (1)`.execute(handle.db), // 23505
    missing: () => sql`select * from no_such_table_here`.execute(handle.db), // 42P01: our bug, not the client's
  };
  app.get('/probe/:name', async (req) => statements[(req.params as { name: string }).name]!());
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await handle.close();
});

describe('database errors', () => {
  it.each([
    ['uuid', 400, 'validation_failed'],
    ['range', 400, 'validation_failed'],
    ['nul', 400, 'validation_failed'],
    ['duplicate', 409, 'conflict'],
  ])('%s: a value the client chose is %i %s', async (name, status, code) => {
    const res = await app.inject({ method: 'GET', url: `/probe/${name}` });
    expect(res.statusCode, res.body).toBe(status);
    const body = res.json();
    expect(body.error.code).toBe(code);
    expect(res.body).not.toMatch(/uuid|int4|mapping_probe|SQL|syntax/i);
  });

  it('anything else is 500, and the log line carries the request id and the cause', async () => {
    const res = await app.inject({ method: 'GET', url: '/probe/missing', headers: { 'x-request-id': 'req-mapping-500' } });
    expect(res.statusCode).toBe(500);
    expect(res.json().error).toMatchObject({ code: 'internal_error', request_id: 'req-mapping-500' });
    expect(res.body).not.toMatch(/no_such_table/);
    const line = logLines.find((l) => l.request_id === 'req-mapping-500');
    expect(line).toBeDefined();
    expect(JSON.stringify(line)).toMatch(/no_such_table_here/);
  });
});
