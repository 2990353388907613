-- Collections: money a payer sends to one of the business's accounts, by card (hosted checkout
-- page or a saved card token), bank transfer (pay to an account number quoting a reference) or
-- mobile money (the payer approves a prompt). pending -> completed | failed | expired, once.
-- Payment intents are card collections created through /v1/collections/cards/payment-intents.
create table collections (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  kind text not null check (kind in ('collection', 'payment_intent')),
  customer_id uuid not null references customers(id),
  client_customer_id text,
  client_reference text,
  method text not null check (method in ('card', 'bank_transfer', 'mobile_money')),
  methods jsonb not null,
  amount bigint not null check (amount > 0),
  currency text not null,
  country text not null,
  destination_account_id uuid not null references accounts(id),
  status text not null default 'pending' check (status in ('pending', 'completed', 'failed', 'expired')),
  detailed_status text not null default 'created',
  fee bigint not null default 0 check (fee >= 0),
  failure_code text,
  failure_reason text,
  -- Bank transfer: the reference the payer quotes; an inbound payment with it completes the collection.
  payment_reference text,
  instruction text,
  -- Bank transfer: where to pay {account_number, account_name, bank_name} (the destination account's details).
  bank_instructions jsonb,
  payer_phone text,
  -- Hosted checkout: the session token of the payment link, sealed (deps.sealer) like every secret at rest.
  checkout_token text,
  saved_card_id uuid,
  ledger_transaction_id uuid references ledger_transactions(id),
  transaction_id uuid,
  metadata jsonb not null default '{}'::jsonb,
  expires_at timestamptz not null,
  completed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index collections_list_idx on collections (tenant_id, environment, id desc);
create index collections_customer_idx on collections (tenant_id, environment, customer_id, id desc);
create index collections_status_idx on collections (tenant_id, environment, status, id desc);
create unique index collections_reference_idx on collections (tenant_id, environment, payment_reference)
  where payment_reference is not null;
-- The expiry job scans pending collections that are due, across businesses.
create index collections_expiry_idx on collections (expires_at) where status = 'pending';

-- Saved cards. The card number is sealed (AES-256-GCM, deps.sealer, bound to the row id); the
-- CVV is never stored. card_token is what the business charges with its secret key.
create table saved_cards (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid references customers(id),
  client_customer_id text,
  card_token text not null unique,
  card_sealed text not null,
  card_last4 text not null,
  card_brand text not null,
  card_exp_month text not null,
  card_exp_year text not null,
  is_default boolean not null default false,
  billing_info jsonb,
  deleted_at timestamptz,
  created_at timestamptz not null default now()
);
create index saved_cards_list_idx on saved_cards (tenant_id, environment, id desc) where deleted_at is null;
create index saved_cards_customer_idx on saved_cards (tenant_id, environment, customer_id, id desc) where deleted_at is null;
