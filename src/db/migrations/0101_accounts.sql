-- Accounts: a customer's or the business's own money in one currency. The account id is also
-- its ledger account id (balances live in ledger_balances, written only by src/ledger).
create table accounts (
  id uuid primary key references ledger_accounts(id),
  tenant_id uuid not null,
  environment text not null,
  -- null: the account belongs to the business itself (fees are credited there).
  customer_id uuid references customers(id),
  currency text not null,
  type text not null check (type in ('regular', 'savings')),
  label text not null,
  status text not null default 'active' check (status in ('active', 'frozen', 'deleted')),
  category text not null default 'main',
  account_number text not null,
  bank_details jsonb not null,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index accounts_list_idx on accounts (tenant_id, environment, id desc);
create index accounts_customer_idx on accounts (tenant_id, environment, customer_id, id desc);
create index accounts_label_idx on accounts (tenant_id, environment, label, id desc);
-- The business's own account per currency is looked up for fees.
create index accounts_business_currency_idx on accounts (tenant_id, environment, currency, id)
  where customer_id is null;
-- A payer's bank routes by account number: unique per environment and currency.
create unique index accounts_number_idx on accounts (environment, currency, account_number);

create table account_applications (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null references customers(id),
  application_type text not null check (application_type in ('individual', 'business')),
  status text not null default 'draft'
    check (status in ('draft', 'submitted', 'processing', 'manual_review', 'approved', 'rejected', 'expired')),
  data jsonb not null,
  metadata jsonb not null default '{}'::jsonb,
  validation_errors jsonb not null default '[]'::jsonb,
  tos_agreement_id text,
  account_id uuid references accounts(id),
  submitted_at timestamptz,
  processed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index account_applications_list_idx on account_applications (tenant_id, environment, id desc);
create index account_applications_status_idx on account_applications (tenant_id, environment, status, id desc);

create table account_application_history (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  application_id uuid not null references account_applications(id),
  action text not null,
  actor text not null,
  changes jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index account_application_history_idx on account_application_history (application_id, id);
