import { expect } from 'vitest';
import { cardholder } from '../card-helpers.js';
import { openAccount } from '../fx-helpers.js';
import type { Client } from '../harness.js';
import { sleep } from '../webhooks/receiver.js';

export const DAY = 86_400_000;
export const CLOCKS = '/v1/simulations/test-clocks';

/** Waits until the clock's advance finished (status ready), and answers the clock. */
export async function whenReady(api: Client, id: string, timeoutMs = 20_000): Promise<any> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const clock = (await api.get(`${CLOCKS}/${id}`)).body.data;
    if (clock.status === 'ready') return clock;
    if (Date.now() > end) throw new Error(`clock still ${clock.status} at ${clock.frozen_time}`);
    await sleep(20);
  }
}

/**
 * A sandbox customer with what falls due over a month: a pending card collection, an approved
 * card authorization and a limit order whose target the market never reaches.
 */
export async function dueWork(api: Client) {
  const customer = await cardholder(api);
  const usd = await openAccount(api, 'USD', customer, '500.00');
  const ngn = await openAccount(api, 'NGN', customer);
  const collection = await api.post('/v1/collections', {
    amount: '50.00',
    currency: 'USD',
    country: 'NG',
    customer_id: customer,
    client_customer_id: 'shopper-1',
    client_reference: 'order-1',
    source: { source_type: 'external', methods: ['card'] },
    destination: { destination_type: 'internal_account', id: usd },
  });
  expect(collection.status, collection.text).toBe(200);
  const card = await api.post('/v1/cards', { customer_id: customer, card_type: 'virtual', card_limit: 10000, name_on_card: 'John Doe' });
  expect(card.status, card.text).toBe(200);
  const cardId = card.body.data.card.id as string;
  const funded = await api.post('/v1/transfer', {
    source: { source_type: 'internal_account', id: usd },
    destination: { destination_type: 'card', id: cardId },
    amount: '100.00',
    client_reference: `fund-${cardId.slice(-6)}`,
  });
  expect(funded.status, funded.text).toBe(200);
  const auth = await api.post(`/v1/simulations/cards/${cardId}/authorizations`, { amount: '12.50', merchant_name: 'Corner Cafe' });
  expect(auth.body.data?.status, auth.text).toBe('approved');
  const order = await api.post('/v1/fx/orders', {
    customer_id: customer,
    order_type: 'limit',
    side: 'sell',
    pair: { base: 'USD', quote: 'NGN' },
    amount: '10.00',
    target_rate: '5000',
    source_id: usd,
    destination_id: ngn,
  });
  expect(order.body.data?.status, order.text).toBe('pending');
  return { customer, usd, collection: collection.body.data, authorization: auth.body.data, order: order.body.data };
}
