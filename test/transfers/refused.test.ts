import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientFor, startTestApp, type Client, type TestApp } from '../harness.js';

let t: TestApp;
let api: Client;
let source: string;

beforeAll(async () => {
  t = await startTestApp();
  api = clientFor(t, (await t.tenant('Acme Ltd')).sandbox.secret_key);
  source = (await api.post('/v1/accounts', { currency: 'NGN', label: 'src' })).body.data.id;
  expect((await api.post(`/v1/simulations/accounts/${source}/fund`, { amount: '100.00' })).status).toBe(200);
});
afterAll(async () => t?.close());

// What the batch path does not move (takesBatchPath) is refused with a 400 and moves nothing.
describe('transfers the service does not move', () => {
  it('refuses a crypto destination and a crypto source, and the balance stays', async () => {
    const toCrypto = await api.post('/v1/transfer', {
      source: { source_type: 'internal_account', id: source },
      destination: { destination_type: 'crypto_wallet', wallet_address: '0xabc', blockchain_network: 'ethereum' },
      amount: '10.00',
    });
    expect(toCrypto.status).toBe(400);
    expect(toCrypto.body.error.message).toBe('Transfers to crypto_wallet destinations are not available');
    expect(toCrypto.body.error.details).toContainEqual(
      expect.objectContaining({ field: 'destination.destination_type', code: 'unsupported' }),
    );

    const fromCrypto = await api.post('/v1/transfer', {
      source: { source_type: 'internal_crypto_wallet', id: source },
      destination: { destination_type: 'internal_account', id: source },
      amount: '10.00',
    });
    expect(fromCrypto.status).toBe(400);
    expect(fromCrypto.body.error.details).toContainEqual(expect.objectContaining({ field: 'source.source_type', code: 'unsupported' }));

    expect((await api.get(`/v1/accounts/${source}`)).body.data.balance).toBe('100.00');
  });
});
