-- KYC: one verification case per customer and level, the uploaded documents, and the
-- activated product features. Every index starts with (tenant_id, environment).

create table kyc_cases (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null references customers(id),
  level text not null check (level in ('basic', 'intermediate')),
  -- init: started, documents awaited; pending: submitted; manual_review: waits for an operator;
  -- approved / rejected: decided.
  status text not null check (status in ('init', 'pending', 'manual_review', 'approved', 'rejected')),
  connector text not null,
  review_reason text,
  reject_labels jsonb not null default '[]'::jsonb,
  reject_type text,
  -- The compliance checks of the last submission (what was checked, what hit).
  checks jsonb not null default '[]'::jsonb,
  -- Hosted verification page: only the sha256 of the link's token is kept.
  web_token_hash bytea,
  web_token_expires_at timestamptz,
  reviewed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index kyc_cases_customer_level_idx on kyc_cases (tenant_id, environment, customer_id, level);
create index kyc_cases_customer_idx on kyc_cases (tenant_id, environment, customer_id, id desc);
create index kyc_cases_status_idx on kyc_cases (tenant_id, environment, status, id desc);
create unique index kyc_cases_token_idx on kyc_cases (web_token_hash) where web_token_hash is not null;

create table kyc_documents (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null references customers(id),
  doc_type text not null,
  doc_sub_type text,
  -- ISO 3166-1 alpha-3 issuing country, as the reference keeps it.
  country text not null,
  first_name text,
  middle_name text,
  last_name text,
  number text,
  issued_date date,
  valid_until date,
  dob date,
  place_of_birth text,
  filename text not null,
  -- Decided by the file's magic bytes, never by its name.
  content_type text not null,
  size_bytes integer not null,
  sha256 text not null,
  -- The file itself. Never served back raw: only metadata leaves through the API.
  content bytea not null,
  created_at timestamptz not null default now()
);
create index kyc_documents_customer_idx on kyc_documents (tenant_id, environment, customer_id, id desc);
-- Duplicate identity check: the same document number on another customer of the business.
create index kyc_documents_number_idx on kyc_documents (tenant_id, environment, doc_type, number)
  where number is not null;

-- Duplicate identity check: same name and date of birth within the business.
create index customers_identity_idx on customers (tenant_id, environment, date_of_birth, lower(last_name))
  where date_of_birth is not null;

create table customer_features (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null references customers(id),
  feature_id text not null,
  status text not null check (status in ('active', 'inactive')),
  provider_data jsonb not null default '{}'::jsonb,
  activated_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index customer_features_customer_idx on customer_features (tenant_id, environment, customer_id, feature_id);
