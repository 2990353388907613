-- External accounts (payees): where payouts go. Created `pending`; a background job verifies them
-- with the rail's connector (name enquiry) and moves them to `active` or `failed` exactly once.
create table external_accounts (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null references customers(id),
  payee_type text not null check (payee_type in ('ach_wire', 'sepa', 'swift', 'bank_account', 'mobile_money', 'fps')),
  status text not null default 'pending' check (status in ('pending', 'active', 'failed')),
  account_name text not null,
  account_number text,
  iban text,
  bic text,
  routing_number text,
  sort_code text,
  phone_number text,
  bank_name text,
  institution_id uuid,
  institution_name text,
  institution_type text,
  institution_country text,
  currency text not null,
  account_owner_type text,
  account_type text,
  payment_rail text,
  address jsonb,
  -- What the connector's name enquiry returned, and why verification failed.
  verified_name text,
  failure_reason text,
  -- The account, currency and type it pays into: a duplicate POST returns the existing payee.
  dedupe_key text not null,
  -- Verification job: due time and lease (claimed rows move it forward).
  verify_after timestamptz not null default now(),
  verify_attempts integer not null default 0,
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index external_accounts_list_idx on external_accounts (tenant_id, environment, id desc) where deleted_at is null;
create index external_accounts_customer_idx on external_accounts (tenant_id, environment, customer_id, id desc) where deleted_at is null;
create unique index external_accounts_dedupe_idx on external_accounts (tenant_id, environment, customer_id, dedupe_key)
  where deleted_at is null and status <> 'failed';
-- The verification job scans only pending rows that are due.
create index external_accounts_verify_idx on external_accounts (verify_after) where status = 'pending' and deleted_at is null;
