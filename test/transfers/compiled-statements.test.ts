import { DefaultQueryCompiler, Kysely, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createMovements } from '../../src/modules/transfers/service.js';
import { clientFor, startTestApp, type TestApp } from '../harness.js';

/**
 * The batch path's statements are built by Kysely once per shape (db/compiled.ts): a batch of
 * the same shape as an earlier one only fills in its parameters, with no query tree to build and
 * compile per batch (a share of the server's CPU a transfer, docs/benchmarks.md).
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
});
afterAll(async () => t?.close());

describe('the statements of a batch of transfers', () => {
  it('are built once per shape: a second batch of the same shape builds no insert, and both are booked', async () => {
    const tenant = await t.tenant('Compiled Ltd');
    const api = clientFor(t, tenant.sandbox.secret_key);
    const open = async (fund?: string) => {
      const id = (await api.post('/v1/accounts', { currency: 'NGN', label: 'c' })).body.data.id as string;
      if (fund) expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount: fund })).status).toBe(200);
      return id;
    };
    const [a, b, sink] = [await open('50.00'), await open('50.00'), await open()];
    const ctx = { tenantId: tenant.tenant_id, environment: 'sandbox' as const, keyKind: 'secret' as const, requestId: 'r', settings: {} };
    const batch = () =>
      [a, b, a].map((from) => ({
        ctx,
        config: t.config,
        body: { source: { id: from }, destination: { destination_type: 'internal_account', id: sink }, amount: '1.00' } as never,
      }));
    const inserts = vi.spyOn(Kysely.prototype, 'insertInto');
    // The tables the batch inserts into: the test app's request log builds its own insert on its
    // first flush, a timer's, which may fall in any round.
    const batchInserts = () => inserts.mock.calls.map(([table]) => table).filter((table) => table !== 'api_request_log');
    try {
      for (const round of [1, 2, 3]) {
        inserts.mockClear();
        const outcomes = await t.db.transaction().execute((trx) => createMovements(trx, batch()));
        expect(outcomes.every((o) => o.ok)).toBe(true);
        // The first two rounds may build (a shape's first statement; the lock of accounts seen for
        // the first time goes the usual way), the third finds every statement compiled.
        if (round === 3) expect(batchInserts()).toEqual([]);
      }
    } finally {
      inserts.mockRestore();
    }
    const sunk = (await api.get(`/v1/accounts/${sink}`)).body.data;
    expect(sunk.balance).toBe('9.00');
    const list = (await api.get(`/v1/transfers?account_id=${sink}`)).body.data;
    expect(list.total_items).toBe(9);
  });

  it('send a value that is the same for every row of the batch once: the write statement of 4 transfers', async () => {
    const tenant = await t.tenant('Shared Values Ltd');
    const api = clientFor(t, tenant.sandbox.secret_key);
    const open = async (fund?: string) => {
      const id = (await api.post('/v1/accounts', { currency: 'NGN', label: 'v' })).body.data.id as string;
      if (fund) expect((await api.post(`/v1/simulations/accounts/${id}/fund`, { amount: fund })).status).toBe(200);
      return id;
    };
    const [a, b, sink] = [await open('50.00'), await open('50.00'), await open()];
    const ctx = { tenantId: tenant.tenant_id, environment: 'sandbox' as const, keyKind: 'secret' as const, requestId: 'r', settings: {} };
    const batch = () =>
      [a, b, a, b].map((from) => ({
        ctx,
        config: t.config,
        body: { source: { id: from }, destination: { destination_type: 'internal_account', id: sink }, amount: '1.00' } as never,
      }));
    const writeStatement = async () => {
      let sent: CompiledQuery<unknown> | undefined;
      const outcomes = await t.db.transaction().execute(async (trx) => {
        const spy = vi.spyOn(trx.getExecutor(), 'executeQuery');
        try {
          return await createMovements(trx, batch());
        } finally {
          sent = spy.mock.calls.map(([q]) => q as CompiledQuery<unknown>).find((q) => q.sql.startsWith('with '));
          spy.mockRestore();
        }
      });
      expect(outcomes.every((o) => o.ok)).toBe(true);
      return sent!;
    };
    await writeStatement(); // the shapes' first statements
    const statement = await writeStatement();
    // Every placeholder a value of its own would be one value per row and column. The business,
    // environment, currency, statuses, times and empty fields of the batch's rows go once instead.
    const occurrences = statement.sql.match(/\$\d+/g)!.length;
    expect(statement.parameters.length).toBe(new Set(statement.sql.match(/\$\d+/g)).size);
    expect(statement.parameters.length).toBeLessThan(occurrences * 0.55);
    expect((await api.get(`/v1/accounts/${sink}`)).body.data.balance).toBe('8.00');
  });

  it('a lone transfer over HTTP, after the first, compiles none of its statements: claim, locks, reads and its write', async () => {
    const tenant = await t.tenant('Lone Compiled Ltd');
    const api = clientFor(t, tenant.sandbox.secret_key);
    const a = (await api.post('/v1/accounts', { currency: 'NGN', label: 'a' })).body.data.id as string;
    expect((await api.post(`/v1/simulations/accounts/${a}/fund`, { amount: '50.00' })).status).toBe(200);
    const sink = (await api.post('/v1/accounts', { currency: 'NGN', label: 's' })).body.data.id as string;
    const compiles = vi.spyOn(DefaultQueryCompiler.prototype, 'compileQuery');
    // What a transfer sends (a background job of the test app may compile statements of its own
    // meanwhile, and the request log's insert, which also sets a setting, on its first flush).
    const moneyPath = /idempotency_keys|ledger_|pg_advisory_xact_lock|set_config|"(accounts|transactions|transfers|events)"/;
    const ofTransfer = (text: string) => moneyPath.test(text) && !text.includes('"api_request_log"');
    try {
      for (const round of [1, 2, 3]) {
        compiles.mockClear();
        const body = { source: { id: a }, destination: { destination_type: 'internal_account', id: sink }, amount: '1.00' };
        expect((await api.post('/v1/transfers', body, { idempotencyKey: `lone-${round}` })).status).toBe(200);
        const compiled = compiles.mock.results.map((r) => (r.value as CompiledQuery<unknown>).sql).filter(ofTransfer);
        // The first may compile (a statement's first use in this process); the third finds every one compiled.
        if (round === 3) expect(compiled).toEqual([]);
      }
    } finally {
      compiles.mockRestore();
    }
    expect((await api.get(`/v1/accounts/${sink}`)).body.data.balance).toBe('3.00');
  });
});
