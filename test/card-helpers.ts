import { johnDoe, type Client } from './harness.js';

const CARD_DATA = { annual_remuneration: 12000, estimated_monthly_limit: '200.50', ip_address: '12.23.31.23' };

/**
 * A sandbox customer who may hold cards: KYC approved (intermediate when physical cards are
 * wanted) and the card features activated, as a business would do it over the API.
 */
export async function cardholder(api: Client, options: { physical?: boolean; overrides?: Record<string, unknown> } = {}): Promise<string> {
  const res = await api.post('/v1/customers', johnDoe(options.overrides));
  if (res.status !== 200) throw new Error(`customer: ${res.text}`);
  const id = res.body.data.id as string;
  const kyc = await api.post(`/v1/simulations/kyc/${id}`, { outcome: 'approved', level: options.physical ? 'intermediate' : 'basic' });
  if (kyc.status !== 200) throw new Error(`kyc: ${kyc.text}`);
  for (const feature_id of options.physical ? ['virtual_cards', 'physical_cards'] : ['virtual_cards']) {
    const act = await api.post('/v1/risk/features/activate', { feature_id, customer_id: id, provider_data: CARD_DATA });
    if (act.status !== 200) throw new Error(`feature ${feature_id}: ${act.text}`);
  }
  return id;
}

/** A new virtual card of a cardholder (limit 10,000), funded with nothing yet; its id. */
export async function virtualCard(api: Client, customer: string): Promise<string> {
  const res = await api.post('/v1/cards', { customer_id: customer, card_type: 'virtual', card_limit: 10000, name_on_card: 'John Doe' });
  if (res.status !== 200) throw new Error(`card: ${res.text}`);
  return res.body.data.card.id as string;
}
