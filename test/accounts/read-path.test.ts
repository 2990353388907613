import type { KyselyPlugin } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/db/client.js';
import { newId } from '../../src/lib/ids.js';
import { createTenant } from '../../src/modules/tenants/service.js';
import { appOnDatabase, openTestDatabase } from '../harness.js';

/**
 * Counts the statements the app sends to the database (every query passes the plugin once),
 * leaving out API key lookups: the key cache expires by time, which a loaded machine can reach
 * between two requests (the key cache is the auth module's and has its own tests). Also left out:
 * the request log's background flushes (every 100 ms), which are no request's round trips.
 */
function statementCounter() {
  // transformQuery also sees subqueries as they are built; transformResult runs once per statement.
  const tables = new WeakMap<object, string | undefined>();
  const counter = {
    statements: 0,
    /** The rows of the last statement counted. */
    rows: [] as unknown[],
    plugin: {
      transformQuery: (args) => {
        type Table = { table?: { identifier?: { name?: string } } };
        const node = args.node as { kind: string; from?: { froms: Table[] }; into?: Table };
        const table = node.kind === 'SelectQueryNode' ? node.from?.froms[0] : node.kind === 'InsertQueryNode' ? node.into : undefined;
        // The process's own heartbeat (db/instance.ts, every second) and background writes (the
        // request log's insert; a job's `set local synchronous_commit`) are no statement of a request.
        const raw = node.kind === 'RawNode' ? ((node as { sqlFragments?: string[] }).sqlFragments?.join('') ?? '') : '';
        const background = raw.includes('process_instances')
          ? 'process_instances'
          : raw.includes('synchronous_commit')
            ? 'api_request_log'
            : undefined;
        tables.set(args.queryId, background ?? table?.table?.identifier?.name);
        return args.node;
      },
      transformResult: async (args) => {
        if (!['api_keys', 'api_request_log', 'process_instances'].includes(tables.get(args.queryId) ?? '')) {
          counter.statements++;
          counter.rows = args.result.rows;
        }
        return args.result;
      },
    } satisfies KyselyPlugin,
  };
  return counter;
}

describe('account read path: round trips per request', () => {
  let handle: DatabaseHandle;
  let app: FastifyInstance;
  const counter = statementCounter();
  let key: string;

  const call = async (method: 'GET' | 'POST', url: string, body?: unknown) => {
    const res = await app.inject({
      method,
      url,
      headers: { 'api-key': key, ...(body ? { 'content-type': 'application/json', 'idempotency-key': newId() } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: res.json() as { data: Record<string, unknown> } };
  };

  beforeAll(async () => {
    handle = await openTestDatabase();
    app = await appOnDatabase(handle.db.withPlugin(counter.plugin), handle.kind);
    key = (await handle.db.transaction().execute((trx) => createTenant(trx, 'Reader'))).sandbox.secret_key;
  });
  afterAll(async () => {
    await app.close();
    await handle.close();
  });

  it('GET /v1/accounts/{id} is one statement (account and balance together) once the key is cached', async () => {
    const created = await call('POST', '/v1/accounts', { currency: 'NGN', label: 'reads' });
    expect(created.status).toBe(200);
    const id = created.body.data.id as string;
    expect((await call('POST', `/v1/simulations/accounts/${id}/fund`, { amount: '12.34' })).status).toBe(200);

    counter.statements = 0;
    const read = await call('GET', `/v1/accounts/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ id, balance: '12.34', available_balance: '12.34', currency: 'NGN', status: 'active' });
    expect(counter.statements).toBe(1);
    // Only what the answer shows, its timestamps as text (no Date made and written out again).
    const [row] = counter.rows as Record<string, unknown>[];
    expect(Object.keys(row!).sort()).toEqual(
      [
        'id',
        'customer_id',
        'currency',
        'type',
        'label',
        'status',
        'category',
        'account_number',
        'bank_details',
        'metadata',
        'created_at',
        'updated_at',
        'posted',
        'pending_debits',
      ].sort(),
    );
    expect(typeof row!.created_at).toBe('string');
    expect(typeof row!.updated_at).toBe('string');

    counter.statements = 0;
    const missing = await call('GET', `/v1/accounts/${newId()}`);
    expect(missing.status).toBe(404);
    expect(counter.statements).toBe(1);
  });

  it('concurrent GET /v1/accounts/{id} share statements, and each is answered as if alone', async () => {
    const mine: string[] = [];
    for (const label of ['a', 'b', 'c']) mine.push((await call('POST', '/v1/accounts', { currency: 'NGN', label })).body.data.id as string);
    expect((await call('POST', `/v1/simulations/accounts/${mine[0]}/fund`, { amount: '5.00' })).status).toBe(200);
    const otherKey = (await handle.db.transaction().execute((trx) => createTenant(trx, 'Other reader'))).sandbox.secret_key;
    const otherAccount = await app.inject({
      method: 'POST',
      url: '/v1/accounts',
      headers: { 'api-key': otherKey, 'content-type': 'application/json', 'idempotency-key': newId() },
      payload: JSON.stringify({ currency: 'NGN', label: 'theirs' }),
    });
    const theirs = (otherAccount.json() as { data: { id: string } }).data.id;
    const get = (id: string, as = key) => app.inject({ method: 'GET', url: `/v1/accounts/${id}`, headers: { 'api-key': as } });
    await get(mine[0]!); // the key is cached

    counter.statements = 0;
    const missing = newId();
    const asked = Array.from({ length: 30 }, (_, i) => [mine[0]!, mine[1]!, mine[2]!, theirs, missing][i % 5]!);
    const answers = await Promise.all([...asked.map((id) => get(id)), get(theirs, otherKey)]);
    for (const [i, id] of asked.entries()) {
      const res = answers[i]!;
      if (id === theirs || id === missing) {
        expect(res.statusCode, id).toBe(404);
        expect(res.json().error.code).toBe('not_found');
      } else {
        expect(res.statusCode).toBe(200);
        expect(res.json().data).toMatchObject({ id, balance: id === mine[0] ? '5.00' : '0.00' });
      }
    }
    // Its own business reads the same account in the same burst.
    expect(answers[30]!.statusCode).toBe(200);
    expect(answers[30]!.json().data.id).toBe(theirs);
    expect(counter.statements).toBeLessThan(10);
  });

  it('GET /v1/accounts is the page and its count, balances joined in', async () => {
    const other = await call('POST', '/v1/accounts', { currency: 'NGN', label: 'empty' });
    counter.statements = 0;
    const list = await call('GET', '/v1/accounts?items_per_page=10');
    expect(list.status).toBe(200);
    const items = (list.body.data as { items: Record<string, unknown>[] }).items;
    expect(items.map((a) => [a.label, a.balance])).toEqual(
      expect.arrayContaining([
        ['reads', '12.34'],
        ['empty', '0.00'],
      ]),
    );
    expect(items.find((a) => a.id === other.body.data.id)?.available_balance).toBe('0.00');
    expect(counter.statements).toBe(2);
  });
});
