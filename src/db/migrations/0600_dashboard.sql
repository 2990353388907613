-- Dashboard: the people who log in for a business, their sessions, and the public keys the
-- dashboard may show again (public keys are not secrets; secret keys are never stored here).

create table dashboard_users (
  id uuid primary key,
  tenant_id uuid not null references tenants(id),
  -- Lower-cased at sign-up; one login per email across the whole program.
  email text not null unique,
  -- scrypt$N$r$p$salt$hash (base64): memory-hard, per-user salt, parameters stored for upgrades.
  password_hash text not null,
  created_at timestamptz not null default now()
);
create index dashboard_users_tenant_idx on dashboard_users (tenant_id, id);

create table dashboard_sessions (
  id uuid primary key,
  -- sha256 of the cookie's random token: a database leak does not yield usable sessions.
  token_hash bytea not null unique,
  user_id uuid not null references dashboard_users(id) on delete cascade,
  tenant_id uuid not null,
  -- The environment the person is looking at; every page shows only its data.
  environment text not null check (environment in ('sandbox', 'live')),
  -- Synchronizer CSRF token for this session's forms.
  csrf_token text not null,
  -- A secret to show exactly once (new keys, webhook secret), sealed with the secrets key.
  flash_sealed text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index dashboard_sessions_tenant_idx on dashboard_sessions (tenant_id, environment, id);
create index dashboard_sessions_expiry_idx on dashboard_sessions (expires_at);

create table dashboard_public_keys (
  tenant_id uuid not null references tenants(id),
  environment text not null check (environment in ('sandbox', 'live')),
  public_key text not null,
  updated_at timestamptz not null default now(),
  primary key (tenant_id, environment)
);
