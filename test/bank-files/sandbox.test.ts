import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../src/ledger/index.js';
import * as bank from '../../src/modules/bank-files/service.js';
import { dispatchPendingPayouts, settleDueSandboxPayouts } from '../../src/modules/transfers/payout-lifecycle.js';
import { bankDeps } from '../../src/workers/bank-files.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp } from '../harness.js';
import { approveKyc } from '../kyc-helpers.js';
import { nubans, payoutBody, verifiedPayee } from '../payout-fixtures.js';

/** The sandbox runs the live path: its payouts travel in pain.001 files and settle by the sandbox bank's pain.002 and camt.054. */
let t: TestApp;
let api: Client;
let customer: string;
let dataDir: string;
let tenantId: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'bank-sandbox-'));
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0, DATA_DIR: dataDir });
  const tenant = await t.tenant('Sandbox Bank Co');
  tenantId = tenant.tenant_id;
  api = clientFor(t, tenant.sandbox.secret_key);
  customer = (await api.post('/v1/customers', johnDoe())).body.data.id;
  await approveKyc(api, customer);
}, 60_000);
afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('the sandbox bank', () => {
  it('books a simulated bank transfer through the importer, completing the collection it names', async () => {
    const account = (await api.post('/v1/accounts', { currency: 'NGN', label: 'in', customer_id: customer })).body.data;
    const collection = (
      await api.post('/v1/collections', {
        amount: '5000.00',
        currency: 'NGN',
        country: 'NG',
        customer_id: customer,
        source: { source_type: 'external', methods: ['bank_transfer'] },
        destination: { destination_type: 'internal_account', id: account.id },
      })
    ).body.data;
    const url = `/v1/simulations/accounts/${account.id}/bank-credits`;
    const res = await api.post(url, { amount: '5000.00', payer_name: 'Ada Obi', reference: collection.bank_transfer.reference });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ outcome: 'credited', amount: '5000.00', currency: 'NGN', payer_name: 'Ada Obi' });
    expect((await api.get(`/v1/collections/${collection.id}`)).body.data.status).toBe('completed');
    const events = await t.db.selectFrom('events').select('event_type').where('event_group_id', '=', collection.id).orderBy('id').execute();
    expect(events.map((e) => e.event_type)).toEqual(['collection.status.pending', 'collection.status.completed']);
    const items = (await api.get(`/v1/transactions?account_id=${account.id}`)).body.data.items;
    expect(items.some((i: { description: string }) => i.description.includes('Ada Obi'))).toBe(true);
    const live = clientFor(t, (await t.tenant('Live')).live.secret_key);
    expect((await live.post(url, { amount: '1.00' })).status).toBe(404);
    expect((await api.post(url, { amount: '1.001' })).status).toBe(400);
  });

  it('sends sandbox payouts in an XSD-valid pain.001 and settles them from its own answers', async () => {
    const source = (await api.post('/v1/accounts', { currency: 'NGN', label: 'out', customer_id: customer })).body.data.id;
    expect((await api.post(`/v1/simulations/accounts/${source}/bank-credits`, { amount: '1000.00' })).status).toBe(200);
    const payee = await verifiedPayee(t, api, customer, nubans(490000)());
    const id = (await api.post('/v1/transfer', { ...payoutBody(source, payee, '300.00', { description: 'Rent' }), customer_id: customer }))
      .body.data.id;
    await dispatchPendingPayouts(t.db, { SANDBOX_RAIL_DELAY_MS: 0 });
    // No timer: the sandbox bank connection's files settle it.
    await settleDueSandboxPayouts(t.db);
    expect((await api.get(`/v1/transfers/${id}`)).body.data.transfer_status).toBe('processing');
    const [connection] = (await bank.listConnections(t.db)).filter((c) => c.environment === 'sandbox');
    const result = await bank.exchange(
      t.unitOfWork,
      t.db,
      connection!.id,
      bankDeps(t.config, t.sealer, { warn: () => undefined } as never),
    );
    expect(result.delivered).toHaveLength(1);
    const outbox = join(dataDir, 'sandbox-bank', 'ngn', 'outbox');
    const [file] = readdirSync(outbox);
    execFileSync('xmllint', ['--noout', '--schema', join(import.meta.dirname, 'xsd', 'pain.001.001.09.xsd'), join(outbox, file!)], {
      stdio: 'pipe',
    });
    expect((await api.get(`/v1/transfers/${id}`)).body.data.transfer_status).toBe('completed');
    const kinds = (await bank.listFiles(t.db, connection!.id)).map((f) => `${f.direction} ${f.kind}`);
    expect(kinds.slice(0, 3)).toEqual(['in camt.054', 'in pain.002', 'out pain.001']);
    expect((await reconcile(t.db, tenantId)).ok).toBe(true);
  });
});
