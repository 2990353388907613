import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/lib/crypto.js';
import { newId } from '../../src/lib/ids.js';
import { canonicalJson } from '../../src/lib/json.js';
import type { CreatedTenant } from '../../src/modules/tenants/service.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let biz: CreatedTenant;
let api: Client;

beforeAll(async () => {
  t = await startTestApp();
  biz = await t.tenant();
  api = clientFor(t, biz.sandbox.secret_key);
});
afterAll(() => t.close());

async function customersWithEmail(email: string) {
  return (await api.get(`/v1/customers?email=${encodeURIComponent(email)}`)).body.data.total_items;
}

describe('idempotency (docs/api-rules.md#idempotency)', () => {
  it('concurrent duplicates have one effect; the others get the replay or 409 in progress', async () => {
    const body = johnDoe();
    const results = await Promise.all(Array.from({ length: 12 }, () => api.post('/v1/customers', body, { idempotencyKey: 'race-1' })));
    const ids = new Set<string>();
    for (const r of results) {
      if (r.status === 200) ids.add(r.body.data.id);
      else {
        expect(r.status).toBe(409);
        expect(r.body.error.code).toBe('idempotency_request_in_progress');
        expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    }
    expect(ids.size).toBe(1);
    expect(await customersWithEmail(body.email)).toBe(1);
  });

  it('scopes keys by business and environment', async () => {
    const body = johnDoe();
    const sandbox = await api.post('/v1/customers', body, { idempotencyKey: 'shared-key' });
    const live = await clientFor(t, biz.live.secret_key).post('/v1/customers', body, { idempotencyKey: 'shared-key' });
    const other = await clientFor(t, (await t.tenant()).sandbox.secret_key).post('/v1/customers', body, { idempotencyKey: 'shared-key' });
    for (const r of [sandbox, live, other]) expect(r.status).toBe(200);
    expect(new Set([sandbox.body.data.id, live.body.data.id, other.body.data.id]).size).toBe(3);
  });

  it('stores business errors (409) and replays them', async () => {
    const body = johnDoe();
    await api.post('/v1/customers', body);
    const conflict = await api.post('/v1/customers', body, { idempotencyKey: 'dup-409' });
    expect(conflict.status).toBe(409);
    const replay = await api.post('/v1/customers', body, { idempotencyKey: 'dup-409' });
    expect(replay.status).toBe(409);
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.text).toBe(conflict.text);
  });

  it('a claim whose lease ran out (crashed process) is taken over and runs afresh', async () => {
    const body = johnDoe();
    // A crashed process left an in-progress claim for this very request.
    const fingerprint = sha256Hex(`customers.create\n{}\n${canonicalJson(body)}`);
    await t.db
      .insertInto('idempotency_keys')
      .values({
        tenant_id: biz.tenant_id,
        environment: 'sandbox',
        key: 'crashed',
        fingerprint,
        state: 'in_progress',
        claim_token: newId(),
        locked_until: new Date(Date.now() + 60_000),
        expires_at: new Date(Date.now() + 86_400_000),
      })
      .execute();
    const busy = await api.post('/v1/customers', body, { idempotencyKey: 'crashed' });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('idempotency_request_in_progress');
    expect(await customersWithEmail(body.email)).toBe(0);

    await sql`update idempotency_keys set locked_until = now() - interval '1 second' where key = 'crashed'`.execute(t.db);
    const retry = await api.post('/v1/customers', body, { idempotencyKey: 'crashed' });
    expect(retry.status).toBe(200);
    expect(retry.headers['idempotency-replayed']).toBeUndefined();
    expect(await customersWithEmail(body.email)).toBe(1);
    const replay = await api.post('/v1/customers', body, { idempotencyKey: 'crashed' });
    expect(replay.headers['idempotency-replayed']).toBe('true');
  });

  it('keys past their retention are forgotten and can be used again', async () => {
    const body = johnDoe();
    const first = await api.post('/v1/customers', body, { idempotencyKey: 'old-key' });
    await sql`update idempotency_keys set expires_at = now() - interval '1 second' where key = 'old-key'`.execute(t.db);
    const other = johnDoe();
    const second = await api.post('/v1/customers', other, { idempotencyKey: 'old-key' });
    expect(second.status).toBe(200);
    expect(second.body.data.id).not.toBe(first.body.data.id);
  });
});

// Issue #15: a claim follows its owner process. One whose owner is gone (no heartbeat for a few
// seconds, or no instance row) is taken over at once; a live owner's claim is still 409.
/** An in-progress claim for exactly this request, owned by `owner`, its lease a minute ahead. */
async function leftClaim(key: string, body: unknown, owner: string) {
  await sql`insert into idempotency_keys
      (tenant_id, environment, key, fingerprint, state, claim_token, locked_until, expires_at, owner_id)
    values (${biz.tenant_id}, 'sandbox', ${key}, ${sha256Hex(`customers.create\n{}\n${canonicalJson(body)}`)}, 'in_progress',
      ${newId()}, now() + interval '60 seconds', now() + interval '1 day', ${owner})`.execute(t.db);
}

async function instance(heartbeatSecondsAgo: number) {
  const id = newId();
  await sql`insert into process_instances (id, pid, host, heartbeat_at)
    values (${id}, 999999, 'elsewhere', now() - make_interval(secs => ${heartbeatSecondsAgo}))`.execute(t.db);
  return id;
}

describe('idempotency claims follow their owner process', () => {
  it('a claim whose owner stopped heartbeating is taken over at once, within the lease', async () => {
    const body = johnDoe();
    await leftClaim('dead-owner', body, await instance(60));
    const retry = await api.post('/v1/customers', body, { idempotencyKey: 'dead-owner' });
    expect(retry.status).toBe(200);
    expect(await customersWithEmail(body.email)).toBe(1);
    const replay = await api.post('/v1/customers', body, { idempotencyKey: 'dead-owner' });
    expect(replay.headers['idempotency-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(retry.body.data.id);
  });

  it('a claim whose owner left no instance row at all (gone) is taken over at once', async () => {
    const body = johnDoe();
    await leftClaim('gone-owner', body, newId());
    expect((await api.post('/v1/customers', body, { idempotencyKey: 'gone-owner' })).status).toBe(200);
    expect(await customersWithEmail(body.email)).toBe(1);
  });

  it("a live owner's claim answers 409 in progress with a short Retry-After, and is never run twice", async () => {
    const body = johnDoe();
    await leftClaim('live-owner', body, await instance(0));
    const busy = await api.post('/v1/customers', body, { idempotencyKey: 'live-owner' });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('idempotency_request_in_progress');
    expect(Number(busy.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(busy.headers['retry-after'])).toBeLessThanOrEqual(5);
    expect(await customersWithEmail(body.email)).toBe(0);
  });

  it("a different request under a dead owner's key is still 422 idempotency_key_reused", async () => {
    const body = johnDoe();
    await leftClaim('dead-other', body, await instance(60));
    const other = await api.post('/v1/customers', johnDoe(), { idempotencyKey: 'dead-other' });
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('idempotency_key_reused');
  });

  it('this process registers itself and keeps its heartbeat fresh', async () => {
    await api.post('/v1/customers', johnDoe());
    const rows = await sql<{ fresh: boolean; pid: number }>`
      select heartbeat_at > now() - interval '5 seconds' as fresh, pid from process_instances where pid = ${process.pid}`.execute(t.db);
    expect(rows.rows).toHaveLength(1);
    expect(rows.rows[0]!.fresh).toBe(true);
  });
});
