-- Dashboard teams: a role per login, invitations and password resets by link, and an audit log
-- of what people did in the dashboard.

-- Logins made before roles existed created their business: they are its owners.
alter table dashboard_users add column role text not null default 'owner'
  check (role in ('owner', 'admin', 'developer', 'viewer'));

-- One row per link handed out: an invitation (a new login with a role) or a password reset of
-- an existing login. Only the SHA-256 of the link's token is stored; a link works once.
create table dashboard_invites (
  id uuid primary key,
  tenant_id uuid not null references tenants(id),
  kind text not null check (kind in ('invite', 'reset')),
  email text not null,
  role text not null check (role in ('owner', 'admin', 'developer', 'viewer')),
  -- The login a reset is for (null for invitations).
  user_id uuid references dashboard_users(id) on delete cascade,
  token_hash bytea not null unique,
  created_by uuid,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  used_at timestamptz
);
create index dashboard_invites_tenant_idx on dashboard_invites (tenant_id, id desc);

-- Who did what, when: kept when the person is removed (email copied, no foreign key).
create table dashboard_audit_log (
  id uuid primary key,
  tenant_id uuid not null references tenants(id),
  environment text,
  user_id uuid,
  user_email text not null,
  action text not null,
  target text,
  detail text,
  created_at timestamptz not null default now()
);
create index dashboard_audit_log_tenant_idx on dashboard_audit_log (tenant_id, id desc);
