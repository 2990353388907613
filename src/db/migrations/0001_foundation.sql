-- Foundation: businesses (tenants), their API keys, idempotency records and the event outbox.
-- Every business table is keyed by (tenant_id, environment, ...) so it can be distributed by
-- tenant later without a rewrite. Ids are UUIDv7 made by the application: time-ordered, so
-- "newest first" is "id descending" and one index serves both lookups and keyset pagination.

create table tenants (
  id uuid primary key,
  name text not null,
  -- Per-business settings (fees, limits, rate-limit quota); defaults come from configuration.
  settings jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);

create table api_keys (
  id uuid primary key,
  tenant_id uuid not null references tenants(id),
  environment text not null check (environment in ('sandbox', 'live')),
  kind text not null check (kind in ('secret', 'public')),
  -- sha256 of the whole key: keys carry >= 256 random bits, so a fast hash is safe to store.
  key_hash bytea not null unique,
  prefix text not null,
  last4 text not null,
  -- A public and a secret key made together form a pair; rotation replaces the pair.
  pair_id uuid not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz,
  revoked_at timestamptz
);
create index api_keys_tenant_idx on api_keys (tenant_id, environment, created_at desc);

create table idempotency_keys (
  tenant_id uuid not null,
  environment text not null,
  key text not null,
  fingerprint text not null,
  state text not null check (state in ('in_progress', 'completed')),
  locked_until timestamptz not null,
  -- Which claim owns the key: completion and release only touch their own claim, so a worker
  -- whose lease ran out cannot complete (and its work rolls back) after another took over.
  claim_token uuid not null,
  response_status integer,
  -- The stored response: JSON text, or AES-GCM sealed text when it carries a secret.
  response_body text,
  response_sealed boolean not null default false,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (tenant_id, environment, key)
);
create index idempotency_keys_expiry_idx on idempotency_keys (expires_at);

-- Transactional outbox: written in the same transaction as the change it reports.
create table events (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  event_type text not null,
  event_category text not null,
  event_group_id text not null,
  payload jsonb not null,
  created_at timestamptz not null default now()
);
create index events_tenant_idx on events (tenant_id, environment, id desc);
