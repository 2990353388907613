import type { Db } from '../src/db/client.js';
import { newId } from '../src/lib/ids.js';
import { reviewCase } from '../src/modules/kyc/service.js';
import type { Client } from './harness.js';

/** Tiny valid files for uploads (content decides the type, not the name). */
export const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
export const JPEG_B64 = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]).toString('base64');
export const PDF_B64 = Buffer.from('%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n').toString('base64');

export function passport(customerId: string, overrides: Record<string, unknown> = {}) {
  return {
    customer_id: customerId,
    metadata: {
      idDocType: 'PASSPORT',
      idDocSubType: 'FRONT_SIDE',
      country: 'NGA',
      number: `A${newId().slice(-8)}`,
      validUntil: '2035-01-15',
    },
    content: PNG_B64,
    filename: 'passport_front.png',
    ...overrides,
  };
}

export function selfie(customerId: string) {
  return { customer_id: customerId, metadata: { idDocType: 'SELFIE', country: 'NGA' }, content: JPEG_B64, filename: 'selfie.jpg' };
}

export function certificate(customerId: string) {
  return {
    customer_id: customerId,
    metadata: { idDocType: 'REGISTRATION_CERTIFICATE', country: 'NGA', number: `RC${newId().slice(-6)}` },
    content: PDF_B64,
    filename: 'cert.pdf',
  };
}

export async function createCustomer(api: Client, body: Record<string, unknown>): Promise<string> {
  const res = await api.post('/v1/customers', body);
  if (res.status !== 200) throw new Error(`customer create failed: ${res.text}`);
  return res.body.data.id as string;
}

/** Uploads a passport and a selfie, then submits: the sandbox decides at once. */
export async function verify(api: Client, customerId: string) {
  for (const doc of [passport(customerId), selfie(customerId)]) {
    const up = await api.post('/v1/customers/kyc/upload-document', doc);
    if (up.status !== 200) throw new Error(`upload failed: ${up.text}`);
  }
  return api.post('/v1/customers/kyc/start-s2s', { customer_id: customerId });
}

export function business(persons: Record<string, unknown>[]) {
  return {
    type: 'business',
    email: `biz+${newId().slice(-8)}@example.com`,
    phone: '+2348012345678',
    business_name: 'Acme Trading Ltd',
    business_description: 'Wholesale trade',
    business_type: 'limited_company',
    business_industry: 'retail',
    registration_number: `RC${newId().slice(-6)}`,
    address: { address_line1: '1 Broad Street', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' },
    associated_persons: persons,
  };
}

/** KYC approved through the sandbox simulation (idempotent: a second call is a 409 we ignore). */
export async function approveKyc(api: Client, customerId: string, level: 'basic' | 'intermediate' = 'basic') {
  const res = await api.post(`/v1/simulations/kyc/${customerId}`, { outcome: 'approved', level });
  if (res.status !== 200 && res.body?.error?.code !== 'kyc_already_completed') {
    throw new Error(`KYC approval failed: ${res.text}`);
  }
}

/** Approves KYC if needed and activates the feature, as a business would before using it. */
export async function activateFeature(api: Client, customerId: string, featureId: string, providerData: Record<string, unknown> = {}) {
  await approveKyc(api, customerId);
  const res = await api.post('/v1/risk/features/activate', { feature_id: featureId, customer_id: customerId, provider_data: providerData });
  if (res.status !== 200) throw new Error(`activating ${featureId} failed: ${res.text}`);
}

/** Home currencies by default (HOME_CURRENCIES): other customer accounts need `<ccy>_account`. */
export async function enableAccountCurrency(api: Client, customerId: string, currency: string) {
  if (['NGN', 'USD'].includes(currency)) return;
  await activateFeature(api, customerId, `${currency.toLowerCase()}_account`, { source_of_funds: 'salary' });
}

/** Live has no simulations: documents go to the manual connector and an operator approves. */
export async function approveKycLive(db: Db, tenantId: string, api: Client, customerId: string) {
  const res = await verify(api, customerId);
  if (res.status !== 200) throw new Error(`KYC submission failed: ${res.text}`);
  await db.transaction().execute((trx) => reviewCase(trx, { tenantId, environment: 'live' }, customerId, 'approved'));
}

/** international_transfers needs KYC at intermediate, then the feature's provider data. */
export async function enableInternationalTransfers(api: Client, customerId: string) {
  await approveKyc(api, customerId, 'intermediate');
  await activateFeature(api, customerId, 'international_transfers', { source_of_funds: 'salary', estimated_monthly_limit: 10000 });
}
