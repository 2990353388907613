import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listInstitutions } from '../../src/lib/institutions.js';
import { fanOutTick } from '../../src/modules/webhooks/delivery.js';
import { verifyDuePayees } from '../../src/modules/external-accounts/service.js';
import { rsaKeyPair } from '../card-crypto.js';
import { cardholder } from '../card-helpers.js';
import { describeErrors, referenceOperations, requestExamples, responseValidator, type RequestExample } from '../conformance/reference.js';
import { clientFor, johnDoe, startTestApp, type Client, type TestApp, type TestResponse } from '../harness.js';
import { activateFeature, approveKyc, business, enableInternationalTransfers } from '../kyc-helpers.js';

/**
 * Conformance with the reference surface (test/conformance/reference, MIT): every fiat request
 * example of the reference files is sent to the server as written, only its placeholder ids
 * replaced by ids of real resources of the same kind. Each is accepted, or refused only where the
 * contract decides against the reference (REFUSED lists each with its section). Every 2xx answer,
 * and the answer of every reference GET operation, is validated against the reference's response
 * schema under the contract's rules (see conformance/reference.ts).
 */
let t: TestApp;
let api: Client;
let apiKey: string;

/** Real resources the examples' placeholder ids stand for. */
interface State {
  person: string;
  usd: string;
  usd2: string;
  zar: string;
  payeeUsd: string;
  payeeNgn: string;
  payeeZar: string;
  card: string;
  cardApplication: string;
  business: string;
  associatedPerson: string;
  kycIndividual: string;
  kycBusiness: string;
  riskIndividual: string;
  riskBusiness: string;
  account: string;
  accountApplication: string;
  paymentIntent: string;
  collection: string;
  cardToken: string;
  transaction: string;
  event: string;
  order: string;
  /** KYC'd at intermediate, nothing activated: the international transfers activation example. */
  intlCustomer: string;
  /** A funded USD account and an active ZAR payee, no ZAR account: the ssi order examples. */
  ssiCustomer: string;
  ssiUsd: string;
  ssiPayeeZar: string;
}
const s = {} as State;

const gtb = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '058')!;
/** The bank the examples name (bank_name "Access Bank"): their account number is a valid NUBAN there. */
const access = listInstitutions({ country: 'NG', type: 'bank' }).find((i) => i.code === '044')!;
/** A South African bank: the ZAR settlement instruction of the FX order examples. */
const standardBank = listInstitutions({ country: 'ZA', type: 'bank' }).find((i) => i.code === '051001')!;
const mtnGh = listInstitutions({ country: 'GH', type: 'mobile_money' }).find((i) => i.code === 'MTN')!;

type Setter = (st: State) => unknown;
interface Case {
  /** Dotted paths in the example body replaced before sending (placeholder ids only). */
  set?: Record<string, Setter>;
  /** The URL, where the reference path has parameters. */
  url?: (st: State) => string;
  headers?: () => Record<string, string>;
  /** Prepares state the example assumes (documents uploaded before a KYC submission, …). */
  before?: (st: State) => Promise<void>;
}

/** Refusals the contract decides, each with its section: status, error code and the field named. */
const REFUSED: Record<string, { status: number; code: string; fields: string[]; contract: string }> = {
  'collections.yaml POST /v1/collections CardCollection': {
    status: 400,
    code: 'validation_failed',
    fields: ['destination.destination_type'],
    contract: 'preamble: fiat only (destination internal_crypto_wallet)',
  },
  'collections.yaml POST /v1/collections ExternalCryptoWallet': {
    status: 400,
    code: 'validation_failed',
    fields: ['destination.destination_type'],
    contract: 'preamble: fiat only (destination external_crypto_wallet)',
  },
  'collections.yaml POST /v1/collections/cards/payment-intents CreateIntentOnly': {
    status: 400,
    code: 'validation_failed',
    fields: ['destination.destination_type'],
    contract: 'preamble: fiat only (destination internal_crypto_wallet)',
  },
  'collections.yaml POST /v1/collections/cards/payment-intents CreateIntentAndCharge': {
    status: 400,
    code: 'validation_failed',
    fields: ['destination.destination_type'],
    contract: 'preamble: fiat only (destination internal_crypto_wallet)',
  },
  'external-accounts.yaml POST /v1/external-accounts SepaRecipient': {
    status: 400,
    code: 'validation_failed',
    fields: ['address.state'],
    contract: '§1/§14: state "Berlin" is not ISO 3166-2 (DE-BE)',
  },
  'external-accounts.yaml POST /v1/external-accounts SwiftRecipientAccountNumber': {
    status: 400,
    code: 'validation_failed',
    fields: ['bic', 'address.state'],
    contract: '§14: BIC NG2893A is malformed (ISO 9362), state "Lagos" is not ISO 3166-2',
  },
  'external-accounts.yaml POST /v1/external-accounts SwiftRecipientIban': {
    status: 400,
    code: 'validation_failed',
    fields: ['bic', 'address.state'],
    contract: '§14: BIC NG2893A is malformed (ISO 9362), state "Lagos" is not ISO 3166-2',
  },
  'features.yaml POST /v1/risk/features/activate ActivateCryptoWallet': {
    status: 404,
    code: 'not_found',
    fields: [],
    contract: '§14 features: the reference ids except crypto_wallet',
  },
  'transfer.yaml POST /v1/transfer GlobalRemittance': {
    status: 400,
    code: 'validation_failed',
    fields: ['additional_information.remitter_address.state'],
    contract: '§14 reference examples are not rules: state "NY" is not ISO 3166-2',
  },
  'transfer.yaml POST /v1/transfer CryptoTransfer': {
    status: 400,
    code: 'validation_failed',
    fields: ['destination.destination_type'],
    contract: 'preamble: fiat only (destination crypto_wallet)',
  },
  'transfer.yaml POST /v1/transfer CryptoToCardTransfer': {
    status: 400,
    code: 'validation_failed',
    fields: ['source.source_type'],
    contract: 'preamble: fiat only (source crypto_wallet)',
  },
};

/** An associated person of a business customer. */
const director = () => {
  const { type: _type, ...person } = johnDoe({ first_name: 'Ada', last_name: 'Obi' });
  return person;
};
/**
 * Examples this server still refuses although the contract does not decide against them: work
 * left on issue #12, kept visible here. Each runs as a test that is expected to fail, so it turns
 * red (and must move out of this list) on the day the example is accepted.
 */
const NOT_YET: Record<string, string> = {};

const kycCustomer = async (kind: 'individual' | 'business') => {
  if (kind === 'individual') return (await api.post('/v1/customers', johnDoe())).body.data.id as string;
  const res = await api.post('/v1/customers', business([director()]));
  if (res.status !== 200) throw new Error(res.text);
  return res.body.data.id as string;
};

const CASES: Record<string, Case> = {
  // accounts.yaml
  'accounts.yaml POST /v1/accounts/applications Individual application': {
    set: { customer_id: (st) => st.person, 'data.wallet_id': () => undefined },
  },
  'accounts.yaml POST /v1/accounts/applications Business application': {
    set: { customer_id: (st) => st.business, 'data.wallet_id': () => undefined },
  },
  'accounts.yaml PUT /v1/accounts/applications/{id} example': {
    url: (st) => `/v1/accounts/applications/${st.accountApplication}`,
    set: { 'data.wallet_id': () => undefined },
  },
  'accounts.yaml POST /v1/accounts RegularAccount': { set: { customer_id: (st) => st.person } },
  'accounts.yaml POST /v1/accounts RegularAccountWithWallet': { set: { customer_id: (st) => st.person } },
  'accounts.yaml PATCH /v1/accounts/{account_id}/status Freeze': { url: (st) => `/v1/accounts/${st.account}/status` },
  'accounts.yaml PATCH /v1/accounts/{account_id}/status Reactivate': { url: (st) => `/v1/accounts/${st.account}/status` },
  // cards.yaml
  'cards.yaml POST /v1/cards/applications/new example': { set: { customer_id: (st) => st.person, account_id: (st) => st.usd } },
  'cards.yaml POST /v1/cards CreateVirtualCard': { set: { customer_id: (st) => st.person } },
  'cards.yaml POST /v1/cards CreatePhysicalCard': { set: { customer_id: (st) => st.person } },
  'cards.yaml GET /v1/cards/{card_id}/sensitive-details example': {
    url: (st) => `/v1/cards/${st.card}/sensitive-details`,
    headers: () => ({ 'x-client-public-key': Buffer.from(rsaKeyPair().publicKey).toString('base64') }),
  },
  'cards.yaml PUT /v1/cards/{card_id}/pin example': { url: (st) => `/v1/cards/${st.card}/pin` },
  'cards.yaml PATCH /v1/cards/{card_id}/update FreezeCard': { url: (st) => `/v1/cards/${st.card}/update` },
  'cards.yaml PATCH /v1/cards/{card_id}/update ActivateCard': { url: (st) => `/v1/cards/${st.card}/update` },
  'cards.yaml PATCH /v1/cards/{card_id}/update BlockCard': { url: (st) => `/v1/cards/${st.card}/update` },
  'cards.yaml POST /v1/cards/withdraw example': { set: { card_id: (st) => st.card } },
  // collections.yaml
  'collections.yaml POST /v1/collections CardCollection': { set: { customer_id: (st) => st.person, 'destination.id': (st) => st.usd } },
  'collections.yaml POST /v1/collections ExternalCryptoWallet': { set: { customer_id: (st) => st.person } },
  'collections.yaml POST /v1/collections/cards/payment-intents CreateIntentOnly': {
    set: { customer_id: (st) => st.person, 'destination.id': (st) => st.usd },
  },
  'collections.yaml POST /v1/collections/cards/payment-intents CreateIntentAndCharge': {
    set: { customer_id: (st) => st.person, 'destination.id': (st) => st.usd },
  },
  'collections.yaml POST /v1/collections/cards/payment-intents/charge example': {
    set: { payment_intent_id: (st) => st.paymentIntent, card_token: (st) => st.cardToken },
  },
  // customers.yaml
  'customers.yaml POST /v1/customers IndividualCustomer': {},
  'customers.yaml POST /v1/customers BusinessCustomer': {},
  'customers.yaml PUT /v1/customers/{customer_id} UpdateIndividual': {
    url: (st) => `/v1/customers/${st.person}`,
    set: { customer_id: (st) => st.person },
  },
  'customers.yaml PUT /v1/customers/{customer_id} UpdateBusiness': {
    url: (st) => `/v1/customers/${st.business}`,
    set: { customer_id: (st) => st.business, 'associated_persons.0.id': (st) => st.associatedPerson },
  },
  // external-accounts.yaml
  'external-accounts.yaml POST /v1/external-accounts USBankAccount': { set: { customer_id: (st) => st.person } },
  'external-accounts.yaml POST /v1/external-accounts GlobalBankAccountRecipient': {
    set: { customer_id: (st) => st.person, institution_id: () => access.id },
  },
  'external-accounts.yaml POST /v1/external-accounts GlobalMobileMoneyRecipient': {
    set: { customer_id: (st) => st.person, institution_id: () => mtnGh.id },
  },
  'external-accounts.yaml POST /v1/external-accounts SepaRecipient': { set: { customer_id: (st) => st.person } },
  'external-accounts.yaml POST /v1/external-accounts SwiftRecipientAccountNumber': { set: { customer_id: (st) => st.person } },
  'external-accounts.yaml POST /v1/external-accounts SwiftRecipientIban': { set: { customer_id: (st) => st.person } },
  'external-accounts.yaml POST /v1/external-accounts/verify GlobalBankAccount': { set: { institution_id: () => access.id } },
  'external-accounts.yaml POST /v1/external-accounts/verify MobileMoney': { set: { institution_id: () => mtnGh.id } },
  // features.yaml
  'features.yaml POST /v1/risk/features/activate ActivateVirtualCards': {
    set: { customer_id: (st) => st.person, 'provider_data.account_id': (st) => st.usd },
  },
  'features.yaml POST /v1/risk/features/activate ActivateCryptoWallet': { set: { customer_id: (st) => st.person } },
  'features.yaml POST /v1/risk/features/activate ActivateInternationalTransfers': { set: { customer_id: (st) => st.intlCustomer } },
  // fx.yaml
  'fx.yaml POST /v1/fx/quote example': {},
  // destination_type ssi: an active external account of the customer in the currency received
  // (ZAR); the customer holds no ZAR account, so the order opens its settlement account
  'fx.yaml POST /v1/fx/orders market_order': {
    set: { customer_id: (st) => st.ssiCustomer, source_id: (st) => st.ssiUsd, destination_id: (st) => st.ssiPayeeZar },
  },
  'fx.yaml POST /v1/fx/orders limit_order': {
    set: { customer_id: (st) => st.ssiCustomer, source_id: (st) => st.ssiUsd, destination_id: (st) => st.ssiPayeeZar },
  },
  // kyc.yaml: documents of one individual and one business, then their submission
  'kyc.yaml POST /v1/customers/kyc/start KYCRequest': { set: { customer_id: (st) => st.kycIndividual } },
  'kyc.yaml POST /v1/customers/kyc/upload-document PassportUpload': { set: { customer_id: (st) => st.kycIndividual } },
  'kyc.yaml POST /v1/customers/kyc/upload-document SelfieUpload': { set: { customer_id: (st) => st.kycIndividual } },
  'kyc.yaml POST /v1/customers/kyc/upload-document BusinessRegistrationUpload': { set: { customer_id: (st) => st.kycBusiness } },
  'kyc.yaml POST /v1/customers/kyc/upload-document IDCardFrontSide': { set: { customer_id: (st) => st.kycIndividual } },
  'kyc.yaml POST /v1/customers/kyc/start-s2s IndividualKYC': { set: { customer_id: (st) => st.kycIndividual } },
  'kyc.yaml POST /v1/customers/kyc/start-s2s BusinessKYC': {
    set: { customer_id: (st) => st.kycBusiness },
  },
  // risk.yaml: the older KYC paths, the same flow for two other customers
  'risk.yaml POST /v1/risk/start-kyc KYCRequest': { set: { customer_id: (st) => st.riskIndividual } },
  'risk.yaml POST /v1/risk/upload-document PassportUpload': { set: { customer_id: (st) => st.riskIndividual } },
  'risk.yaml POST /v1/risk/upload-document SelfieUpload': { set: { customer_id: (st) => st.riskIndividual } },
  'risk.yaml POST /v1/risk/upload-document BusinessRegistrationUpload': { set: { customer_id: (st) => st.riskBusiness } },
  'risk.yaml POST /v1/risk/upload-document IDCardFrontSide': { set: { customer_id: (st) => st.riskIndividual } },
  'risk.yaml POST /v1/risk/start-kyc-s2s IndividualKYC': { set: { customer_id: (st) => st.riskIndividual } },
  'risk.yaml POST /v1/risk/start-kyc-s2s BusinessKYB': {
    set: { customer_id: (st) => st.riskBusiness },
  },
  // transfer.yaml
  'transfer.yaml POST /v1/transfer GlobalRemittance': {
    set: { 'source.id': (st) => st.usd, 'destination.id': (st) => st.payeeUsd, customer_id: (st) => st.person },
  },
  'transfer.yaml POST /v1/transfer InternalTransfer': {
    set: { 'source.id': (st) => st.usd, 'destination.id': (st) => st.usd2, customer_id: (st) => st.person },
  },
  'transfer.yaml POST /v1/transfer CryptoTransfer': { set: { 'source.id': (st) => st.usd, customer_id: (st) => st.person } },
  'transfer.yaml POST /v1/transfer CryptoToCardTransfer': { set: { 'destination.id': (st) => st.card, customer_id: (st) => st.person } },
};

/** Reference GET operations and the URL that reads a real resource of this sandbox. */
const READS: Record<string, (st: State) => string> = {
  'GET /v1/accounts/applications': () => '/v1/accounts/applications',
  'GET /v1/accounts/applications/pending': () => '/v1/accounts/applications/pending',
  'GET /v1/accounts/applications/{id}': (st) => `/v1/accounts/applications/${st.accountApplication}`,
  'GET /v1/accounts/applications/{id}/history': (st) => `/v1/accounts/applications/${st.accountApplication}/history`,
  'GET /v1/accounts': () => '/v1/accounts',
  'GET /v1/accounts/{account_id}': (st) => `/v1/accounts/${st.usd}`,
  'GET /v1/cards/applications': () => '/v1/cards/applications',
  'GET /v1/cards/applications/{application_id}': (st) => `/v1/cards/applications/${st.cardApplication}`,
  'GET /v1/cards': () => '/v1/cards',
  'GET /v1/cards/{card_id}': (st) => `/v1/cards/${st.card}`,
  'GET /v1/cards/{card_id}/balance': (st) => `/v1/cards/${st.card}/balance`,
  'GET /v1/collections/{id}': (st) => `/v1/collections/${st.collection}`,
  'GET /v1/collections/cards': (st) => `/v1/collections/cards?customer_id=${st.person}`,
  'GET /v1/customers': () => '/v1/customers',
  'GET /v1/customers/{customer_id}': (st) => `/v1/customers/${st.business}`,
  'GET /v1/external-accounts': () => '/v1/external-accounts',
  'GET /v1/external-accounts/{external_account_id}': (st) => `/v1/external-accounts/${st.payeeNgn}`,
  'GET /v1/external-accounts/institutions': () => '/v1/external-accounts/institutions',
  'GET /v1/risk/features': (st) => `/v1/risk/features?customer_id=${st.person}`,
  'GET /v1/fx/supported-currencies': () => '/v1/fx/supported-currencies',
  'GET /v1/fx/rates': () => '/v1/fx/rates',
  'GET /v1/fx/orders': () => '/v1/fx/orders',
  'GET /v1/fx/orders/pending-approvals': () => '/v1/fx/orders/pending-approvals',
  'GET /v1/fx/orders/{order_id}': (st) => `/v1/fx/orders/${st.order}`,
  'GET /v1/customers/{customer_id}/kyc/documents': (st) => `/v1/customers/${st.kycIndividual}/kyc/documents`,
  'GET /v1/customers/{customer_id}/kyc/status': (st) => `/v1/customers/${st.kycIndividual}/kyc/status`,
  'GET /v1/transactions': () => '/v1/transactions',
  'GET /v1/transactions/{transaction_id}': (st) => `/v1/transactions/${st.transaction}`,
  'GET /v1/transactions/volume': () => '/v1/transactions/volume',
  'GET /v1/transfer/rates': () => '/v1/transfer/rates',
  'GET /v1/transfer/supported-currencies': () => '/v1/transfer/supported-currencies',
  'GET /v1/transfer/supported-countries': () => '/v1/transfer/supported-countries',
  'GET /v1/transfer/supported-countries-for-address': () => '/v1/transfer/supported-countries-for-address',
  'GET /v1/webhooks/history': () => '/v1/webhooks/history',
  'GET /v1/webhooks/event/{id}': (st) => `/v1/webhooks/event/${st.event}`,
  'GET /v1/webhooks/calls/{id}': (st) => `/v1/webhooks/calls/${st.event}`,
};
/** Reference GET operations not read here, and why. */
const NOT_READ: Record<string, string> = {
  'GET /v1/cards/{card_id}/sensitive-details': 'sent above as a request example',
  'GET /v1/cards/{card_id}/pin': 'answers the sealed envelope of docs/api-rules.md#card-secrets, not the reference shape',
  'GET /v1/collections/cards/{card_id}': 'no saved card without the hosted checkout page',
  'GET /v1/transactions/export': 'docs/api-rules.md#money: a CSV or JSON file instead of the reference base64 blob',
};

function setPath(body: unknown, path: string, value: unknown) {
  const keys = path.split('.');
  let node = body as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (value === undefined) delete node[last];
  else node[last] = value;
}

const nameOf = (e: Pick<RequestExample, 'file' | 'method' | 'path' | 'name'>) => `${e.file} ${e.method} ${e.path} ${e.name}`;

function expectReferenceShape(file: string, method: string, path: string, res: TestResponse) {
  const validate = responseValidator(file, method, path, res.status);
  expect(validate, `${file} ${method} ${path}: no reference response schema`).not.toBeNull();
  const valid = validate!(res.body);
  expect(valid, `${method} ${path} answer does not match ${file}:\n${describeErrors(validate!.errors)}\n${res.text.slice(0, 1500)}`).toBe(
    true,
  );
}

beforeAll(async () => {
  t = await startTestApp({ SANDBOX_RAIL_DELAY_MS: 0 });
  const tenant = await t.tenant('Conformance Co');
  apiKey = tenant.sandbox.secret_key;
  api = clientFor(t, apiKey);
  const must = async (res: Promise<TestResponse>, status = 200) => {
    const r = await res;
    if (r.status !== status) throw new Error(`setup: ${r.status} ${r.text}`);
    return r.body.data;
  };
  await must(api.post('/v1/webhooks/endpoints', { url: 'https://hooks.example.com/conformance' }), 201);
  s.person = await cardholder(api, { physical: true });
  await enableInternationalTransfers(api, s.person);
  await activateFeature(api, s.person, 'zar_account', { source_of_funds: 'salary' });
  s.usd = (await must(api.post('/v1/accounts', { currency: 'USD', label: 'main', customer_id: s.person }))).id;
  s.usd2 = (await must(api.post('/v1/accounts', { currency: 'USD', label: 'second', customer_id: s.person }))).id;
  s.zar = (await must(api.post('/v1/accounts', { currency: 'ZAR', label: 'rand', customer_id: s.person }))).id;
  s.account = (await must(api.post('/v1/accounts', { currency: 'USD', label: 'to freeze', customer_id: s.person }))).id;
  await must(api.post(`/v1/simulations/accounts/${s.usd}/fund`, { amount: '50000.00' }));
  s.transaction = (await must(api.get(`/v1/transactions?account_id=${s.usd}`))).items[0].id;
  s.payeeUsd = (
    await must(
      api.post('/v1/external-accounts', {
        payee_type: 'ach_wire',
        account_number: '4401682861',
        routing_number: '101019644',
        account_name: 'Amina Bello',
        currency: 'USD',
        customer_id: s.person,
        account_owner_type: 'individual',
        account_type: 'checking',
        address: { address_line1: '1800 N Pole St', city: 'Orlando', state: 'US-FL', postal_code: '32801', country: 'US' },
      }),
      202,
    )
  ).id;
  s.payeeNgn = (
    await must(
      api.post('/v1/external-accounts', {
        payee_type: 'bank_account',
        account_number: '0123456789',
        account_name: 'Amina Bello',
        currency: 'NGN',
        customer_id: s.person,
        institution_id: gtb.id,
      }),
      202,
    ).catch(() => ({ id: s.payeeUsd }))
  ).id;
  s.payeeZar = (
    await must(
      api.post('/v1/external-accounts', {
        payee_type: 'bank_account',
        account_number: '62012345678',
        account_name: 'John Doe',
        currency: 'ZAR',
        customer_id: s.person,
        institution_id: standardBank.id,
      }),
      202,
    )
  ).id;
  s.intlCustomer = await kycCustomer('individual');
  await approveKyc(api, s.intlCustomer, 'intermediate');
  s.ssiCustomer = await kycCustomer('individual');
  await enableInternationalTransfers(api, s.ssiCustomer);
  s.ssiUsd = (await must(api.post('/v1/accounts', { currency: 'USD', label: 'ssi source', customer_id: s.ssiCustomer }))).id;
  await must(api.post(`/v1/simulations/accounts/${s.ssiUsd}/fund`, { amount: '5000.00' }));
  s.ssiPayeeZar = (
    await must(
      api.post('/v1/external-accounts', {
        payee_type: 'bank_account',
        account_number: '62012345679',
        account_name: 'John Doe',
        currency: 'ZAR',
        customer_id: s.ssiCustomer,
        institution_id: standardBank.id,
      }),
      202,
    )
  ).id;
  await verifyDuePayees(t.db, t.unitOfWork, { SANDBOX_RAIL_DELAY_MS: 0 });
  s.card = (
    await must(api.post('/v1/cards', { customer_id: s.person, card_type: 'virtual', name_on_card: 'John Doe', card_limit: 500 }))
  ).id;
  await must(
    api.post('/v1/transfer', {
      source: { source_type: 'internal_account', id: s.usd },
      destination: { destination_type: 'card', id: s.card },
      amount: '20.00',
      description: 'card funding',
      customer_id: s.person,
    }),
  );
  s.cardApplication = (
    await must(
      api.post('/v1/cards/applications/new', {
        customer_id: s.person,
        account_id: s.usd,
        annual_remuneration: 12000,
        estimated_monthly_limit: 200,
        ip_address: '12.23.31.23',
      }),
    )
  ).id;
  s.business = (await must(api.post('/v1/customers', business([director()])))).id;
  s.associatedPerson = (await must(api.get(`/v1/customers/${s.business}`))).associated_persons[0].id;
  s.accountApplication = (
    await must(
      api.post('/v1/accounts/applications', {
        customer_id: s.person,
        application_type: 'individual',
        data: { account_type: 'regular', currency: 'USD' },
      }),
    )
  ).id;
  s.kycIndividual = await kycCustomer('individual');
  s.kycBusiness = await kycCustomer('business');
  s.riskIndividual = await kycCustomer('individual');
  s.riskBusiness = await kycCustomer('business');
  s.paymentIntent = (
    await must(
      api.post('/v1/collections/cards/payment-intents', {
        customer_id: s.person,
        amount: '3.50',
        currency: 'USD',
        destination: { destination_type: 'internal_account', id: s.usd },
        source: { source_type: 'external', methods: ['card'] },
      }),
    )
  ).intent_id;
  s.collection = (
    await must(
      api.post('/v1/collections', {
        amount: '25.00',
        currency: 'USD',
        country: 'US',
        customer_id: s.person,
        source: { source_type: 'external', methods: ['bank_transfer'] },
        destination: { destination_type: 'internal_account', id: s.usd },
      }),
    )
  ).id;
  s.cardToken = (
    await must(api.post('/v1/simulations/card-tokens', { card_number: '4242424242424242', expiry: '12/30', cvv: '123' }))
  ).card_token;
  s.order = (
    await must(
      api.post('/v1/fx/orders', {
        customer_id: s.person,
        order_type: 'market',
        pair: { base: 'USD', quote: 'ZAR' },
        amount: '10',
        source_id: s.usd,
        destination_id: s.zar,
      }),
    )
  ).id;
  await fanOutTick(t.db);
  s.event = (await must(api.get('/v1/webhooks/history'))).items[0].id;
}, 120_000);
afterAll(() => t?.close());

describe('reference request examples', () => {
  const examples = requestExamples();

  it('has a case for every request example of the reference files', () => {
    expect(examples.map(nameOf).filter((n) => !(n in CASES))).toEqual([]);
    expect(Object.keys(CASES).filter((n) => !examples.some((e) => nameOf(e) === n))).toEqual([]);
  });

  for (const example of examples) {
    const name = nameOf(example);
    const test = name in NOT_YET ? it.fails : it;
    test(name, async () => {
      const c = CASES[name] ?? {};
      await c.before?.(s);
      const body = structuredClone(example.body) as Record<string, unknown>;
      for (const [path, value] of Object.entries(c.set ?? {})) setPath(body, path, value(s));
      const url = c.url?.(s) ?? example.path;
      const method = example.method as 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
      const options = { headers: c.headers?.() ?? {} };
      const res = method === 'GET' ? await api.get(url, options) : await t.request(method, url, body, { key: apiKey, ...options });
      const refused = REFUSED[name];
      if (refused) {
        expect(res.status, `${name}: ${res.text}`).toBe(refused.status);
        expect(res.body.error.code).toBe(refused.code);
        const fields = (res.body.error.details ?? []).map((d: { field: string }) => d.field);
        for (const f of refused.fields) expect(fields, `${name} should name ${f} (${refused.contract}): ${res.text}`).toContain(f);
        return;
      }
      expect(res.status < 300, `${name} refused: ${res.text}`).toBe(true);
      expectReferenceShape(example.file, example.method, example.path, res);
    });
  }
});

describe('reference examples that need more than the customer has', () => {
  it('activates international transfers without source_of_funds and records it as not given', async () => {
    const features = (await api.get(`/v1/risk/features?customer_id=${s.intlCustomer}&status=active`)).body.data.features;
    expect(features.map((f: { feature_id: string }) => f.feature_id)).toContain('international_transfers');
    const row = await t.db
      .selectFrom('customer_features')
      .select('provider_data')
      .where('customer_id', '=', s.intlCustomer)
      .where('feature_id', '=', 'international_transfers')
      .executeTakeFirstOrThrow();
    expect(row.provider_data).toMatchObject({ not_given: ['source_of_funds', 'estimated_monthly_limit'] });
  });

  it('opens one ZAR settlement account for the ssi orders and shows it on each order', async () => {
    const orders = (await api.get(`/v1/fx/orders?customer_id=${s.ssiCustomer}`)).body.data.items as Record<string, string>[];
    expect(orders.map((o) => o.order_type).sort()).toEqual(['limit', 'market']);
    const settlement = new Set(orders.map((o) => o.settlement_account_id));
    expect(settlement.size).toBe(1);
    const account = (await api.get(`/v1/accounts/${[...settlement][0]}`)).body.data;
    expect(account).toMatchObject({ currency: 'ZAR', customer_id: s.ssiCustomer, status: 'active' });
    const market = orders.find((o) => o.order_type === 'market')!;
    expect(market.status).toBe('completed');
    expect(market.payout_transfer_id).toBeTruthy();
  });
});

describe('reference read operations', () => {
  it('reads every reference GET operation, or says why not', () => {
    const gets = referenceOperations()
      .filter((o) => o.method === 'GET' && o.file !== 'payment-links.yaml')
      .map((o) => `${o.method} ${o.path}`);
    expect(gets.filter((g) => !(g in READS) && !(g in NOT_READ))).toEqual([]);
  });

  for (const op of referenceOperations().filter((o) => o.method === 'GET')) {
    const key = `${op.method} ${op.path}`;
    const read = READS[key];
    if (!read) continue;
    it(key, async () => {
      const res = await api.get(read(s));
      expect(res.status, res.text).toBe(200);
      expectReferenceShape(op.file, op.method, op.path, res);
    });
  }
});
