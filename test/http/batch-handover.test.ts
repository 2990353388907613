import type { FastifyReply, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchedIdempotency } from '../../src/http/idempotency-batch.js';
import type { KeyedBatch } from '../../src/db/pipeline.js';
import { newId } from '../../src/lib/ids.js';
import { startTestApp, type TestApp } from '../harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** A request and reply with just what the batch path reads and calls, for a business's sandbox. */
function exchange(tenantId: string, n: number) {
  const request = {
    id: `req-${n}`,
    ctx: { tenantId, environment: 'sandbox' },
    headers: { 'idempotency-key': newId() },
    params: {},
    body: { n },
  } as unknown as FastifyRequest;
  const reply = {
    code: () => reply,
    type: () => reply,
    serialize: (value: unknown) => JSON.stringify(value),
  } as unknown as FastifyReply;
  return { request, reply };
}

/** The batch path of an operation named `name`, with `pipeline` as its module's steps. */
const batchedFor = (name: string, pipeline: (keyed: KeyedBatch<number, { n: number }>) => Promise<void>, maxBatch: number) =>
  new BatchedIdempotency<number, { n: number }>(t.db, t.sealer, 24, name, pipeline, { maxBatch, lanes: 1 });

// A committed batch hands its lane on before it answers its requests (http/idempotency-batch.ts,
// docs/money-path.md "Gathering"): the next batch's claim and first locks are sent while this
// thread writes the answers. Before, every answer of a batch was given before the next batch
// began, with the database idle meanwhile.
describe('the batch path hands its lane on before it answers', () => {
  it('starts the next batch (its first locks planned and sent) before the batch before it is answered', async () => {
    const tenant = await t.tenant('Handover Ltd');
    const order: string[] = [];
    let batches = 0;
    const batched = batchedFor(
      'test.handover',
      async (keyed) => {
        const batch = ++batches;
        order.push(`batch ${batch} begins`);
        const { claimed } = await keyed.claim({ statements: [], read: () => batch });
        keyed.answer(claimed.map((n) => ({ ok: true as const, data: { n } })));
      },
      2,
    );
    const answers = [1, 2, 3, 4].map((n) => {
      const { request, reply } = exchange(tenant.tenant_id, n);
      return batched.run(request, reply, n).then((text) => {
        order.push(`answer ${n}`);
        return JSON.parse(text as unknown as string) as { data: { n: number } };
      });
    });
    const bodies = await Promise.all(answers);
    expect(bodies.map((b) => b.data.n)).toEqual([1, 2, 3, 4]);
    // Items 1 and 2 were one batch, 3 and 4 the next; the next began before 1 and 2 were answered.
    expect(order).toEqual(['batch 1 begins', 'batch 2 begins', 'answer 1', 'answer 2', 'answer 3', 'answer 4']);
  });
});

// Two lanes can both create a business's first fx_position account; the later batch's write fails
// on the unique index and its items rerun alone. A lone item can lose the same race again (the
// other lane's row not yet committed when it looked): it was answered with that failure (a 409
// to the first FX orders of a business, test/fx/batch.test.ts, now and then). It runs again.
describe('a lone item that lost a get-or-create race', () => {
  it('runs again and finds the row, instead of answering the unique violation', async () => {
    const tenant = await t.tenant('Race Ltd');
    let runs = 0;
    const batched = batchedFor(
      'test.race',
      async (keyed) => {
        runs++;
        const { claimed } = await keyed.claim({ statements: [], read: () => undefined });
        if (runs === 1)
          throw Object.assign(new Error('duplicate key value violates unique constraint'), {
            code: '23505',
            constraint: 'ledger_system_accounts_idx',
          });
        keyed.answer(claimed.map((n) => ({ ok: true as const, data: { n } })));
      },
      1,
    );
    const { request, reply } = exchange(tenant.tenant_id, 7);
    const text = await batched.run(request, reply, 7);
    expect(JSON.parse(text as unknown as string)).toMatchObject({ data: { n: 7 } });
    expect(runs).toBe(2);
  });
});
