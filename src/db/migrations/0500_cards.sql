-- Cards: applications, issued cards (each with its own ledger account, id = card id) and
-- authorizations (each holding funds on the card's ledger account until captured or released).

create table card_applications (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null,
  account_id uuid not null,
  annual_remuneration bigint not null,
  estimated_monthly_limit bigint not null,
  currency text not null,
  ip_address text not null,
  status text not null check (status in ('approved', 'pending', 'needs_verification', 'needs_information',
    'manual_review', 'denied', 'locked', 'canceled')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index card_applications_list_idx on card_applications (tenant_id, environment, id desc);
create index card_applications_customer_idx on card_applications (tenant_id, environment, customer_id, id desc);

create table cards (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null,
  card_type text not null check (card_type in ('virtual', 'physical')),
  currency text not null,
  network text not null,
  name_on_card text not null,
  last4 text not null,
  expiry_month int not null,
  expiry_year int not null,
  -- Full PAN, CVV and PIN: sealed with the secrets key, bound to the card id; never in clear.
  pan_sealed text not null,
  cvv_sealed text not null,
  pin_sealed text not null,
  status text not null check (status in ('inactive', 'active', 'freeze', 'blocked', 'lost', 'stolen')),
  -- Spending controls, minor units of the card's currency (null = no limit).
  controls_activated boolean not null default true,
  single_transaction_limit bigint,
  daily_limit bigint,
  monthly_limit bigint,
  allowed_categories jsonb not null default '[]'::jsonb,
  blocked_categories jsonb not null default '[]'::jsonb,
  billing_address jsonb not null,
  shipping_address jsonb,
  shipping_method text,
  fulfilment_status text check (fulfilment_status in ('ordered', 'shipped', 'delivered', 'returned')),
  activated_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index cards_list_idx on cards (tenant_id, environment, id desc);
create index cards_customer_idx on cards (tenant_id, environment, customer_id, id desc);
create index cards_status_idx on cards (tenant_id, environment, status, id desc);

create table card_authorizations (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  card_id uuid not null references cards(id),
  currency text not null,
  amount bigint not null check (amount > 0),
  captured_amount bigint,
  merchant_name text not null,
  merchant_category text,
  status text not null check (status in ('approved', 'declined', 'captured', 'reversed', 'expired')),
  decline_reason text,
  -- The ledger hold on the card's account (approved authorizations only).
  hold_id uuid,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((status = 'declined') = (decline_reason is not null)),
  check ((status = 'declined') = (hold_id is null))
);
create index card_authorizations_list_idx on card_authorizations (tenant_id, environment, id desc);
-- Per-card listing and limit windows (daily/monthly spend): ids are UUIDv7, so id order is time order.
create index card_authorizations_card_idx on card_authorizations (tenant_id, environment, card_id, id desc);
-- The expiry job finds approved authorizations past their time.
create index card_authorizations_expiry_idx on card_authorizations (expires_at) where status = 'approved';
