/**
 * One request example per operation with a body, keyed `METHOD path` as the document spells it.
 * They are the README's own bodies where the README has one, and otherwise the smallest body the
 * route accepts; the ids in them are placeholders to replace with the caller's own (a create
 * example such as POST /v1/customers runs as it is). test/docs/openapi-document.test.ts checks
 * every operation with a body has one and that each validates against the operation's schema.
 */
const CUSTOMER = '0190a5b1-7c1e-7c3a-9f0e-2b5d1c4e8a01';
const ACCOUNT = '0190a5b1-7c1e-7c3a-9f0e-2b5d1c4e8a02';
const OTHER_ACCOUNT = '0190a5b1-7c1e-7c3a-9f0e-2b5d1c4e8a03';
const APPLICATION = '0190a5b1-7c1e-7c3a-9f0e-2b5d1c4e8a04';
const CARD = '0190a5b1-7c1e-7c3a-9f0e-2b5d1c4e8a05';
const INTENT = '0190a5b1-7c1e-7c3a-9f0e-2b5d1c4e8a06';

const ADDRESS = { address_line1: '12 Marina Road', city: 'Lagos', country: 'NG', postal_code: '101001', state: 'NG-LA' };
const INDIVIDUAL = {
  type: 'individual',
  first_name: 'John',
  middle_name: 'Michael',
  last_name: 'Doe',
  email: 'john.doe@example.com',
  phone: '+2348012345678',
  gender: 'male',
  date_of_birth: '1990-01-15',
  address: ADDRESS,
};
const TRANSFER = {
  source: { source_type: 'internal_account', id: ACCOUNT },
  destination: { destination_type: 'internal_account', id: OTHER_ACCOUNT },
  amount: '250.50',
  description: 'Rent for March',
  client_reference: 'inv-1001',
};
const APPLICATION_DATA = { account_type: 'regular', currency: 'NGN', label: 'main' };
const REASON = { reason: 'sandbox decision' };
/** A 1×1 PNG: the smallest document content the upload accepts as an image. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const CONTROLS = { activated: true, single_transaction_limit: '200.00', daily_transaction_limit: '500.00' };

export const REQUEST_EXAMPLES: Record<string, unknown> = {
  'POST /v1/customers': INDIVIDUAL,
  'PUT /v1/customers/{customer_id}': { phone: '+2348012345679', address: { ...ADDRESS, address_line1: '14 Marina Road' } },
  'POST /v1/external-accounts': {
    customer_id: CUSTOMER,
    payee_type: 'ach_wire',
    account_name: 'John Doe',
    bank_name: 'Example Bank',
    account_number: '123456789',
    routing_number: '021000021',
    account_owner_type: 'individual',
    account_type: 'checking',
    currency: 'USD',
    address: { address_line1: '1 Main Street', city: 'New York', postal_code: '10001', state: 'US-NY', country: 'US' },
  },
  'POST /v1/external-accounts/verify': { iban: 'DE89370400440532013000', country_code: 'DE', account_owner_type: 'individual' },
  'POST /v1/accounts/applications': { customer_id: CUSTOMER, application_type: 'individual', data: APPLICATION_DATA },
  'POST /v1/accounts/applications/validate': { application_type: 'individual', data: APPLICATION_DATA },
  'POST /v1/accounts/applications/tos': { application_id: APPLICATION, agreement_id: 'tos-2024-01' },
  'PUT /v1/accounts/applications/{id}': { data: { ...APPLICATION_DATA, label: 'savings pot', account_type: 'savings' } },
  'POST /v1/accounts': { currency: 'NGN', label: 'main', customer_id: CUSTOMER },
  'PATCH /v1/accounts/{account_id}/status': { status: 'frozen' },
  'POST /v1/transfer': TRANSFER,
  'POST /v1/transfers': TRANSFER,
  'POST /v1/transfers/bulk': {
    description: 'March payroll',
    transfers: [
      { ...TRANSFER, client_reference: 'pay-1' },
      { ...TRANSFER, amount: '100.00', client_reference: 'pay-2' },
    ],
  },
  'POST /v1/simulations/accounts/{account_id}/fund': {
    amount: '1000.00',
    reference: 'first-funding',
    description: 'Inbound bank transfer',
  },
  'POST /v1/simulations/accounts/{account_id}/bank-credits': {
    amount: '500.00',
    payer_name: 'Ada Obi',
    reference: 'INV-2041',
  },
  'POST /v1/webhooks/endpoints': {
    url: 'https://example.com/webhooks',
    event_types: ['transfer.status.completed', 'transfer.status.failed'],
  },
  'PATCH /v1/webhooks/endpoints/{id}': { status: 'disabled' },
  'POST /v1/webhooks/endpoints/{id}/rotate-secret': { expire_old_in_seconds: 3600 },
  'POST /v1/webhooks/endpoints/{id}/replay': { from: '2026-12-01T00:00:00Z', to: '2026-12-02T00:00:00Z', scope: 'failed' },
  'POST /v1/customers/kyc/start': { customer_id: CUSTOMER, kyc_level: 'basic' },
  'POST /v1/risk/start-kyc': { customer_id: CUSTOMER },
  'POST /v1/customers/kyc/start-s2s': { customer_id: CUSTOMER },
  'POST /v1/risk/start-kyc-s2s': { customer_id: CUSTOMER },
  'POST /v1/simulations/kyc/{customer_id}': { outcome: 'approved' },
  'POST /v1/customers/kyc/upload-document': {
    customer_id: CUSTOMER,
    metadata: { idDocType: 'PASSPORT', country: 'NGA' },
    content: PNG,
    filename: 'passport.png',
  },
  'POST /v1/risk/upload-document': {
    customer_id: CUSTOMER,
    metadata: { idDocType: 'PASSPORT', country: 'NGA' },
    content: PNG,
    filename: 'passport.png',
  },
  'POST /v1/risk/features/eligibility': { feature_id: 'virtual_cards', customer_id: CUSTOMER },
  'POST /v1/risk/features/activate': { feature_id: 'virtual_cards', customer_id: CUSTOMER },
  'POST /v1/fx/quote': { from_currency: 'USD', to_currency: 'NGN', amount: '100.00', direction: 'SELL' },
  'POST /v1/fx/orders': {
    customer_id: CUSTOMER,
    order_type: 'market',
    pair: { base: 'USD', quote: 'NGN' },
    side: 'sell',
    amount: '100.00',
    source_type: 'account',
    source_id: ACCOUNT,
    destination_type: 'account',
    destination_id: OTHER_ACCOUNT,
  },
  'POST /v1/fx/orders/{order_id}/cancel': {},
  'POST /v1/simulations/fx/rates': { base: 'USD', quote: 'NGN', rate: '1550.25' },
  'POST /v1/simulations/transfers/{transfer_id}/complete': REASON,
  'POST /v1/simulations/transfers/{transfer_id}/fail': { reason: 'account_closed' },
  'POST /v1/simulations/transfers/{transfer_id}/return': { reason: 'beneficiary_refused' },
  'POST /v1/collections': {
    amount: '5000.00',
    currency: 'NGN',
    country: 'NG',
    customer_id: CUSTOMER,
    client_reference: 'order-42',
    source: { source_type: 'external', methods: ['bank_transfer'] },
    destination: { destination_type: 'internal_account', id: ACCOUNT },
  },
  'POST /v1/collections/cards/payment-intents': {
    customer_id: CUSTOMER,
    amount: '25.00',
    currency: 'USD',
    country: 'US',
    source: { source_type: 'external', methods: ['card'] },
    destination: { destination_type: 'internal_account', id: ACCOUNT },
  },
  'POST /v1/collections/cards/payment-intents/charge': {
    payment_intent_id: INTENT,
    card_token: 'tok_sandbox_visa',
    first_name: 'John',
    last_name: 'Doe',
    email: 'john.doe@example.com',
  },
  'POST /v1/simulations/collections/{collection_id}/complete': REASON,
  'POST /v1/simulations/collections/{collection_id}/fail': { reason: 'payer_cancelled' },
  'POST /v1/simulations/collections/{collection_id}/expire': REASON,
  'POST /v1/simulations/test-clocks': { frozen_time: '2026-01-31T12:00:00Z', name: 'month-end run' },
  'POST /v1/simulations/test-clocks/{test_clock_id}/advance': { frozen_time: '2026-03-02T12:00:00Z' },
  'POST /v1/simulations/card-tokens': { card_number: '4242424242424242', expiry: '12/30', cvv: '123', customer_id: CUSTOMER },
  'POST /v1/cards/applications/new': {
    customer_id: CUSTOMER,
    account_id: ACCOUNT,
    annual_remuneration: '50000.00',
    estimated_monthly_limit: '2000.00',
    ip_address: '203.0.113.10',
  },
  'POST /v1/cards': {
    customer_id: CUSTOMER,
    card_type: 'virtual',
    card_limit: '1000.00',
    name_on_card: 'John Doe',
    spending_controls: CONTROLS,
  },
  'PATCH /v1/cards/{card_id}/update': { status: 'freeze' },
  'PATCH /v1/cards/{card_id}/spending-controls': CONTROLS,
  'PUT /v1/cards/{card_id}/pin': { card_pin: '4821' },
  'POST /v1/cards/withdraw': { card_id: CARD, amount: '50.00', account_id: ACCOUNT },
  'POST /v1/simulations/cards/{card_id}/authorizations': { amount: '12.50', merchant_name: 'Corner Cafe', merchant_category: '5814' },
  'POST /v1/simulations/card-authorizations/{authorization_id}/capture': { amount: '12.50' },
  'POST /v1/simulations/card-authorizations/{authorization_id}/reverse': {},
  'POST /v1/simulations/card-applications/{application_id}': { status: 'approved' },
  'POST /v1/simulations/cards/{card_id}/fulfilment': { status: 'shipped' },
};
