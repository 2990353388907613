import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkers } from '../../src/workers/index.js';
import { clientFor, johnDoe, sandboxBusiness, startTestApp, type TestApp } from '../harness.js';
import { CLOCKS, DAY, whenReady } from './clock-helpers.js';

/** The clock routes' refusals: live keys, bad instants, backwards or too-long advances, states; and a clock nothing is attached to. */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const now = Date.now();
const at = (ms: number) => new Date(now + ms).toISOString();

describe('test clock routes', () => {
  it('exist in sandbox only: a live key gets not_found on every one', async () => {
    const { tenant } = await sandboxBusiness(t, 'Live Co');
    const live = clientFor(t, tenant.live.secret_key);
    const id = '0190f0f0-0000-7000-8000-000000000000';
    for (const res of [
      await live.post(CLOCKS, { frozen_time: at(0) }),
      await live.get(CLOCKS),
      await live.get(`${CLOCKS}/${id}`),
      await live.post(`${CLOCKS}/${id}/advance`, { frozen_time: at(DAY) }),
      await live.post(`${CLOCKS}/${id}/attach`),
      await live.delete(`${CLOCKS}/${id}`),
    ]) {
      expect(res.status, res.text).toBe(404);
      expect(res.body).toMatchObject({ data: null, error: { code: 'not_found' } });
    }
  });

  it('refuses bad input with the field named', async () => {
    const { api } = await sandboxBusiness(t, 'Input Co');
    for (const body of [
      {},
      { frozen_time: 'tomorrow' },
      { frozen_time: '2026-01-01' },
      { frozen_time: at(0), colour: 'red' },
      { frozen_time: at(0), name: '' },
    ]) {
      const res = await api.post(CLOCKS, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
    }
    expect((await api.post(CLOCKS, { frozen_time: at(0) }, { idempotencyKey: null })).status).toBe(400);
    const clock = (await api.post(CLOCKS, { frozen_time: at(0) })).body.data;
    for (const [frozen_time, why] of [
      [at(0), 'not forward'],
      [at(-DAY), 'backwards'],
      [at(62 * DAY + 1), 'past the cap'],
    ] as const) {
      const res = await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time });
      expect(res.status, why).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'validation_failed', details: [{ field: 'frozen_time' }] });
    }
    expect((await api.get(`${CLOCKS}/not-a-uuid`)).status).toBe(400);
    expect((await api.get(`${CLOCKS}/0190f0f0-0000-7000-8000-000000000000`)).body.error.code).toBe('not_found');
  });

  it('advances one at a time, attaches one clock per business, and deletes when ready', async () => {
    const { api } = await sandboxBusiness(t, 'State Co');
    const other = await sandboxBusiness(t, 'Nosy Co');
    const key = `create-${now}`;
    const first = await api.post(CLOCKS, { frozen_time: at(0), name: 'first' }, { idempotencyKey: key });
    expect(first.status).toBe(201);
    expect((await api.post(CLOCKS, { frozen_time: at(0), name: 'first' }, { idempotencyKey: key })).body.data.id).toBe(first.body.data.id);
    const clock = first.body.data;
    const second = (await api.post(CLOCKS, { frozen_time: at(0) })).body.data;
    expect((await other.api.get(`${CLOCKS}/${clock.id}`)).status).toBe(404);

    expect((await api.post(`${CLOCKS}/${clock.id}/attach`)).body.data.attached).toBe(true);
    expect((await api.post(`${CLOCKS}/${clock.id}/attach`)).status).toBe(200);
    const taken = await api.post(`${CLOCKS}/${second.id}/attach`);
    expect(taken.status).toBe(409);
    expect(taken.body.error.code).toBe('conflict');

    const third = (await api.post(CLOCKS, { frozen_time: at(0) })).body.data;
    expect((await api.post(`${CLOCKS}/${third.id}/advance`, { frozen_time: at(DAY) })).status).toBe(202);
    const advancing = await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: at(62 * DAY) });
    expect(advancing.status).toBe(202);
    expect(advancing.body.data).toMatchObject({ status: 'advancing', frozen_time: at(0), advancing_to: at(62 * DAY) });
    for (const res of [
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: at(DAY) }),
      await api.post(`${CLOCKS}/${clock.id}/detach`),
      await api.post(`${CLOCKS}/${third.id}/attach`),
      await api.delete(`${CLOCKS}/${clock.id}`),
    ]) {
      expect(res.status, res.text).toBe(409);
      expect(res.body.error.code).toBe('invalid_state_transition');
    }

    const list = await api.get(`${CLOCKS}?items_per_page=1`);
    expect(list.body.data).toMatchObject({ total_items: 3, items_per_page: 1, items: [{ id: third.id }] });
    expect((await other.api.get(CLOCKS)).body.data.total_items).toBe(0);

    expect((await api.delete(`${CLOCKS}/${second.id}`)).body.data).toEqual({ id: second.id, deleted: true });
    expect((await api.get(`${CLOCKS}/${second.id}`)).status).toBe(404);
  });
});

describe('a clock nothing is attached to', () => {
  it('moves its own time only: the business stays on real time', async () => {
    const { api } = await sandboxBusiness(t, 'Loose Clock Co');
    const clock = (await api.post(CLOCKS, { frozen_time: at(0) })).body.data;
    const usd = (await api.post('/v1/accounts', { currency: 'USD', label: 'own' })).body.data.id;
    const customer = (await api.post('/v1/customers', johnDoe())).body.data.id;
    const collection = await api.post('/v1/collections', {
      amount: '5.00',
      currency: 'USD',
      country: 'NG',
      customer_id: customer,
      source: { source_type: 'external', methods: ['card'] },
      destination: { destination_type: 'internal_account', id: usd },
    });
    expect(collection.status, collection.text).toBe(200);
    const workers = startWorkers({ config: t.config, db: t.db, dbKind: t.dbKind, sealer: t.sealer, log: t.app.log });
    try {
      await api.post(`${CLOCKS}/${clock.id}/advance`, { frozen_time: at(31 * DAY) });
      expect(await whenReady(api, clock.id)).toMatchObject({ frozen_time: at(31 * DAY), attached: false });
    } finally {
      await workers.stop();
    }
    expect((await api.get(`/v1/collections/${collection.body.data.id}`)).body.data.status).toBe('pending');
  });
});
