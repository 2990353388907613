import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { newId } from '../../src/lib/ids.js';
import { johnDoe, sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
import { holdBalanceRow, waitersAtLeast } from '../row-locks.js';

/**
 * The batch path's Idempotency-Key records (http/idempotency-batch.ts): a new key's record is
 * inserted once, completed, in the transaction of its transfer, under the key's advisory lock
 * (http/idempotency-claim.ts lockKeys); a record that exists is judged as on the lone request's
 * path (http/idempotency.ts), and the two paths exclude each other.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t?.close());

const onPostgres = process.env.DATABASE_URL !== undefined;

async function fundedPair(name: string) {
  const { api, ctx, tenant } = await sandboxBusiness(t, name);
  const open = async () => (await api.post('/v1/accounts', { currency: 'NGN', label: 'k' })).body.data.id as string;
  const [from, to] = [await open(), await open()];
  expect((await api.post(`/v1/simulations/accounts/${from}/fund`, { amount: '50.00' })).status).toBe(200);
  const body = (amount = '1.00') => ({ source: { id: from }, destination: { destination_type: 'internal_account', id: to }, amount });
  const transfers = async () => (await api.get(`/v1/transfers?account_id=${from}`)).body.data.total_items as number;
  return { api, ctx, from, to, body, transfers, secret: tenant.sandbox.secret_key };
}

/** The fingerprint of a transfer's request (the same on either path), read from the record of one made under `key`. */
async function fingerprintOf(ctx: { tenantId: string }, key: string) {
  const { rows } = await sql<{ fingerprint: string }>`
    select fingerprint from idempotency_keys where tenant_id = ${ctx.tenantId} and environment = 'sandbox' and key = ${key}`.execute(t.db);
  return rows[0]!.fingerprint;
}

/** A record of `key` as a lone request's claim leaves it: in progress, owned by `owner`, its lease a minute ahead. */
async function leftClaim(ctx: { tenantId: string }, key: string, fingerprint: string, owner: string, db = t.db) {
  await sql`insert into idempotency_keys
      (tenant_id, environment, key, fingerprint, state, claim_token, locked_until, expires_at, owner_id)
    values (${ctx.tenantId}, 'sandbox', ${key}, ${fingerprint}, 'in_progress', ${newId()}, now() + interval '60 seconds',
      now() + interval '1 day', ${owner})`.execute(db);
}

async function instance(heartbeatSecondsAgo: number) {
  const id = newId();
  await sql`insert into process_instances (id, pid, host, heartbeat_at)
    values (${id}, 999999, 'elsewhere', now() - make_interval(secs => ${heartbeatSecondsAgo}))`.execute(t.db);
  return id;
}

/**
 * The record of `key`: its state and status, the answer's text it stores, and the event it points
 * at instead (a transfer's answer is its event's data: migration 1262), as its type and data.
 */
async function recordOf(ctx: { tenantId: string }, key: string) {
  const { rows } = await sql<{
    state: string;
    response_status: number | null;
    response_body: string | null;
    event: { type: string; data: unknown } | null;
  }>`
    select k.state, k.response_status, k.response_body,
      (select json_build_object('type', e.event_type, 'data', e.event_data) from events e where e.id = k.response_event_id) as event
    from idempotency_keys k
    where k.tenant_id = ${ctx.tenantId} and k.environment = 'sandbox' and k.key = ${key}`.execute(t.db);
  return rows[0];
}

/** What the record of a transfer answered with `answer` holds: no text, its own event. */
const transferRecord = (answer: { text: string; body: { data: unknown } }) => ({
  state: 'completed',
  response_status: 200,
  response_body: null,
  event: { type: 'transfer.status.completed', data: answer.body.data },
});

describe("a batched transfer's Idempotency-Key record", () => {
  it("is the completed answer, written with the transfer, pointing at the transfer's event, and replayed byte for byte", async () => {
    const { api, ctx, body, transfers } = await fundedPair('Once Ltd');
    const first = await api.post('/v1/transfers', body(), { idempotencyKey: 'once' });
    expect(first.status).toBe(200);
    expect(await recordOf(ctx, 'once')).toEqual(transferRecord(first));
    // Inserted completed, it carries no claim: no lease, token or owner (migration 1269).
    const { rows: claim } = await sql`
      select locked_until, claim_token, owner_id from idempotency_keys where tenant_id = ${ctx.tenantId} and key = 'once'`.execute(t.db);
    expect(claim).toEqual([{ locked_until: null, claim_token: null, owner_id: null }]);
    const replay = await api.post('/v1/transfers', body(), { idempotencyKey: 'once' });
    expect(replay.text).toBe(first.text);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect((await api.post('/v1/transfers', body('2.00'), { idempotencyKey: 'once' })).body.error.code).toBe('idempotency_key_reused');
    expect(await transfers()).toBe(1);
  });

  it('replays from the event byte for byte whatever the strings hold (escapes, accents, emoji) and whatever jsonb did to the key order', async () => {
    const { api, ctx, body } = await fundedPair('Escapes Ltd');
    const request = { ...body('3.21'), description: 'Caf\u00e9 "q" \\ \t \u2028 \ud83d\udcb8 </script>', client_reference: 'r\u00e9f-1' };
    const first = await api.post('/v1/transfers', request, { idempotencyKey: 'escapes' });
    expect(first.status).toBe(200);
    expect(await recordOf(ctx, 'escapes')).toEqual(transferRecord(first));
    const replay = await api.post('/v1/transfers', request, { idempotencyKey: 'escapes' });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.text).toBe(first.text);
  });

  it('an outcome that is not stored (400) leaves no record: the corrected request runs under the same key', async () => {
    const { api, ctx, from, body, transfers } = await fundedPair('Dropped Ltd');
    const refused = await api.post(
      '/v1/transfers',
      { source: { id: from }, destination: { destination_type: 'internal_account', id: from }, amount: '1.00' },
      { idempotencyKey: 'dropped' },
    );
    expect(refused.status).toBe(400);
    expect(await recordOf(ctx, 'dropped')).toBeUndefined();
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'dropped' })).status).toBe(200);
    expect(await transfers()).toBe(1);
  });

  it("a lone request's claim in progress: 409 while its owner lives, taken over once it is gone, then replayed", async () => {
    const { api, ctx, body, transfers } = await fundedPair('Left Ltd');
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'left-probe' })).status).toBe(200);
    const fingerprint = await fingerprintOf(ctx, 'left-probe');
    await leftClaim(ctx, 'left-live', fingerprint, await instance(0));
    const busy = await api.post('/v1/transfers', body(), { idempotencyKey: 'left-live' });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('idempotency_request_in_progress');
    expect(await transfers()).toBe(1);

    await leftClaim(ctx, 'left-dead', fingerprint, await instance(60));
    const taken = await api.post('/v1/transfers', body(), { idempotencyKey: 'left-dead' });
    expect(taken.status).toBe(200);
    expect(await recordOf(ctx, 'left-dead')).toEqual(transferRecord(taken));
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'left-dead' })).text).toBe(taken.text);
    expect(await transfers()).toBe(2);
  });

  it('a record past its retention is taken over by another request, whose answer is then replayed', async () => {
    const { api, ctx, body, transfers } = await fundedPair('Expired Ltd');
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'expired' })).status).toBe(200);
    await sql`update idempotency_keys set expires_at = now() - interval '1 second'
      where tenant_id = ${ctx.tenantId} and key = 'expired'`.execute(t.db);
    const second = await api.post('/v1/transfers', body('2.00'), { idempotencyKey: 'expired' });
    expect(second.status).toBe(200);
    expect(await recordOf(ctx, 'expired')).toEqual(transferRecord(second));
    expect((await api.post('/v1/transfers', body('2.00'), { idempotencyKey: 'expired' })).text).toBe(second.text);
    expect(await transfers()).toBe(2);
  });

  it("a batch rerun item by item after a fault: the faulty item's key has no record, its neighbours' are completed once", async () => {
    const { api, ctx, body, transfers } = await fundedPair('Rerun Ltd');
    // A NUL character is valid JSON but not storable in PostgreSQL text: a database error mid-batch.
    const bodies = Array.from({ length: 5 }, (_, i) => ({ ...body(), metadata: { line: i === 2 ? 'bad\u0000' : `ok-${i}` } }));
    const results = await Promise.all(bodies.map((b, i) => api.post('/v1/transfers', b, { idempotencyKey: `rerun-${i}` })));
    expect(results.map((r) => r.status)).toEqual([200, 200, expect.any(Number), 200, 200]);
    expect(await recordOf(ctx, 'rerun-2')).toBeUndefined();
    for (const i of [0, 1, 3, 4]) {
      expect(await recordOf(ctx, `rerun-${i}`)).toEqual(transferRecord(results[i]!));
      expect((await api.post('/v1/transfers', bodies[i], { idempotencyKey: `rerun-${i}` })).text).toBe(results[i]!.text);
    }
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'rerun-2' })).status).toBe(200);
    expect(await transfers()).toBe(5);
  });

  it("is judged the same on the lone request's path, and the other way round", async () => {
    const { api, body } = await fundedPair('Paths Ltd');
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'paths-1' })).status).toBe(200);
    const customer = await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'paths-1' });
    expect(customer.body.error.code).toBe('idempotency_key_reused');
    expect((await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'paths-2' })).status).toBe(200);
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'paths-2' })).body.error.code).toBe('idempotency_key_reused');
  });
});

describe.skipIf(!onPostgres)('a batch holding a key, and another claim of it at once', () => {
  /** Holds the source's balance row, so a batch of a transfer from it waits there, its keys' locks held. */
  const holding = (from: string) => holdBalanceRow(t.db, from);

  it("a lone request's claim of the key, in another app, waits for the batch's commit, then is judged against its record", async () => {
    const { api, ctx, from, body, transfers, secret } = await fundedPair('Lone Waits Ltd');
    const release = await holding(from);
    const transfer = api.post('/v1/transfers', body(), { idempotencyKey: 'both-paths' });
    await waitersAtLeast(t.db, 1);
    // Sent to a second app on the same database, as another process would take it.
    const other = await t.otherApp();
    onTestFinished(() => other.close());
    const customer = other
      .inject({
        method: 'POST',
        url: '/v1/customers',
        headers: { 'api-key': secret, 'idempotency-key': 'both-paths', 'content-type': 'application/json' },
        payload: JSON.stringify(johnDoe()),
      })
      .then((r) => ({ status: r.statusCode, body: r.json() as { error: { code: string } } }));
    await waitersAtLeast(t.db, 2); // the lone claim waits on the batch's lock of the key
    await release();
    expect((await transfer).status).toBe(200);
    expect((await customer).body.error.code).toBe('idempotency_key_reused');
    expect((await recordOf(ctx, 'both-paths'))?.state).toBe('completed');
    expect(await transfers()).toBe(1);
  });

  it('a record written without the lock meanwhile (an older process): the batch fails on its insert, runs again and finds it', async () => {
    const { api, ctx, from, body, transfers } = await fundedPair('No Lock Ltd');
    expect((await api.post('/v1/transfers', body(), { idempotencyKey: 'unlocked-probe' })).status).toBe(200);
    const fingerprint = await fingerprintOf(ctx, 'unlocked-probe');
    const release = await holding(from);
    const transfer = api.post('/v1/transfers', body(), { idempotencyKey: 'unlocked' });
    await waitersAtLeast(t.db, 1);
    // A claim as code before the key's lock made it: a plain insert, committed while the batch works.
    await leftClaim(ctx, 'unlocked', fingerprint, await instance(0));
    await release();
    const answer = await transfer;
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('idempotency_request_in_progress');
    expect((await recordOf(ctx, 'unlocked'))?.state).toBe('in_progress');
    expect(await transfers()).toBe(1);
  });
});
