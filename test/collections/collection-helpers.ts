import { expect } from 'vitest';
import { johnDoe, sandboxBusiness, type TestApp } from '../harness.js';

/**
 * A sandbox business with a customer, and what the collections tests make for it over the API:
 * the customer's USD accounts, card collections and payment intents into one of them, and saved
 * cards (the sandbox's card-token simulation).
 */
export async function collectionBusiness(t: TestApp, name: string) {
  const { tenant, api, ctx } = await sandboxBusiness(t, name);
  const customer = (await api.post('/v1/customers', johnDoe())).body.data.id as string;
  /** A new USD account of the customer; its id. */
  const account = async () =>
    (await api.post('/v1/accounts', { currency: 'USD', label: 'c', customer_id: customer })).body.data.id as string;
  /** A card collection of `amount` USD into `destination`; its id. */
  const collection = async (destination: string, amount = '10.00') => {
    const res = await api.post('/v1/collections', {
      amount,
      currency: 'USD',
      country: 'NG',
      customer_id: customer,
      source: { source_type: 'external', methods: ['card'] },
      destination: { destination_type: 'internal_account', id: destination },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.id as string;
  };
  /** A saved card of the customer; its token. */
  const cardToken = async (card_number: string) =>
    (await api.post('/v1/simulations/card-tokens', { card_number, expiry: '12/30', cvv: '999', customer_id: customer })).body.data
      .card_token as string;
  /** A card payment intent of `amount` USD into `destination`; its id. */
  const paymentIntent = async (destination: string, amount = '2.00') => {
    const res = await api.post('/v1/collections/cards/payment-intents', {
      customer_id: customer,
      amount,
      currency: 'USD',
      destination: { destination_type: 'internal_account', id: destination },
      source: { source_type: 'external', methods: ['card'] },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data.intent_id as string;
  };
  return { tenant, api, ctx, customer, account, collection, cardToken, paymentIntent };
}
