-- The operator console (/ops): the platform's own staff, apart from every business's dashboard
-- users. Operators, their sessions, and an append-only audit log of every decision they make.

create table ops_operators (
  id uuid primary key,
  -- Lower-cased; one operator per email.
  email text not null unique,
  role text not null check (role in ('compliance', 'operations', 'admin', 'viewer')),
  -- scrypt$N$r$p$salt$hash, null until the operator has used the one-time setup link.
  password_hash text,
  -- sha256 of the one-time setup link's token, and when it stops working.
  setup_token_hash bytea unique,
  setup_expires_at timestamptz,
  -- TOTP second factor, sealed with the secrets key (lib/crypto Sealer, operator id as context);
  -- pending: shown on the enrolment page, active once a code from it has been entered.
  totp_secret_sealed text,
  totp_pending_sealed text,
  -- The last time step accepted: a code is never accepted twice.
  totp_last_step bigint,
  disabled_at timestamptz,
  created_at timestamptz not null default now()
);

create table ops_sessions (
  id uuid primary key,
  -- sha256 of the cookie's random token: a database leak does not yield usable sessions.
  token_hash bytea not null unique,
  operator_id uuid not null references ops_operators(id) on delete cascade,
  -- Synchronizer CSRF token for this session's forms.
  csrf_token text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index ops_sessions_operator_idx on ops_sessions (operator_id);

-- Every decision: who, when, what (action and target), why. Rows are only ever inserted: the
-- trigger below refuses UPDATE and DELETE, and TRUNCATE, whoever tries.
create table ops_audit_log (
  id uuid primary key,
  at timestamptz not null default now(),
  -- Null for the command line (operator_email then says 'cli').
  operator_id uuid,
  operator_email text not null,
  action text not null,
  target_type text not null,
  target_id text not null,
  tenant_id uuid,
  environment text,
  reason text,
  detail jsonb not null default '{}'::jsonb
);
create index ops_audit_log_at_idx on ops_audit_log (id desc);
create index ops_audit_log_target_idx on ops_audit_log (target_type, target_id, id desc);

create or replace function ops_audit_log_append_only() returns trigger
language plpgsql as $$
begin
  raise exception 'ops_audit_log is append-only (% refused)', tg_op using errcode = 'insufficient_privilege';
end
$$;

create trigger ops_audit_log_no_update
  before update or delete on ops_audit_log
  for each row execute function ops_audit_log_append_only();

create trigger ops_audit_log_no_truncate
  before truncate on ops_audit_log
  for each statement execute function ops_audit_log_append_only();

-- A business's live API access, frozen by an operator: its live keys answer 403
-- live_access_frozen until lifted. An update of tenants notifies every process's key cache
-- (migration 0900), so a freeze takes effect at once everywhere.
alter table tenants add column live_frozen_at timestamptz;
alter table tenants add column live_frozen_reason text;

-- The review queue: every case waiting for a person, oldest first, across businesses.
create index kyc_cases_manual_review_idx on kyc_cases (updated_at, id) where status = 'manual_review';
