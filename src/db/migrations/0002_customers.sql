create table customers (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  type text not null check (type in ('individual', 'business')),
  status text not null default 'active',
  email text not null,
  phone text not null,
  first_name text,
  middle_name text,
  last_name text,
  gender text,
  date_of_birth date,
  business_name text,
  business_description text,
  business_type text,
  business_industry text,
  registration_number text,
  external_id text,
  address jsonb not null,
  kyc_status text not null default 'not_started',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index customers_list_idx on customers (tenant_id, environment, id desc);
create unique index customers_email_idx on customers (tenant_id, environment, type, lower(email));
create unique index customers_external_id_idx on customers (tenant_id, environment, external_id)
  where external_id is not null;

create table associated_persons (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  customer_id uuid not null references customers(id),
  type text not null default 'ubo',
  status text not null default 'active',
  first_name text not null,
  middle_name text,
  last_name text not null,
  email text not null,
  phone text not null,
  gender text not null,
  date_of_birth date not null,
  address jsonb not null,
  kyc_status text not null default 'not_started',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index associated_persons_customer_idx on associated_persons (customer_id, id);
