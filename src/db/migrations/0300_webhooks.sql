-- Webhooks: endpoints, one delivery per (event, endpoint), and every delivery attempt.

-- The outbox (0001) gains a fan-out marker: the fan-out worker claims events where it is null
-- (FOR UPDATE SKIP LOCKED), creates their deliveries and sets it in the same transaction. A
-- marker per event, not a high-water id, because concurrent transactions commit out of id order.
alter table events add column fanned_out_at timestamptz;
create index events_fanout_idx on events (id) where fanned_out_at is null;

create table webhook_endpoints (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null check (environment in ('sandbox', 'live')),
  url text not null,
  -- Event types this endpoint wants; null = all.
  event_types jsonb,
  status text not null check (status in ('enabled', 'disabled')),
  disabled_reason text,
  -- whsec_ secrets, AES-GCM sealed (lib/crypto Sealer) with the endpoint id as context.
  secret_sealed text not null,
  -- During a rotation overlap the old secret signs too, until previous_secret_expires_at.
  previous_secret_sealed text,
  previous_secret_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index webhook_endpoints_tenant_idx on webhook_endpoints (tenant_id, environment, id desc);

create table webhook_deliveries (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  event_id uuid not null,
  endpoint_id uuid not null references webhook_endpoints(id),
  event_type text not null,
  transaction_id text,
  -- pending (not tried yet), processing (leased by a worker), sent (2xx), retrying, failed.
  status text not null check (status in ('pending', 'processing', 'sent', 'retrying', 'failed')),
  attempts integer not null default 0,
  -- When a worker may take it next; while processing, when the lease runs out.
  next_attempt_at timestamptz,
  lease_token uuid,
  -- A manual resend of a finished delivery: one attempt, no schedule, never disables the endpoint.
  manual boolean not null default false,
  last_attempt_at timestamptz,
  last_status_code integer,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (endpoint_id, event_id)
);
create index webhook_deliveries_tenant_idx on webhook_deliveries (tenant_id, environment, id desc);
create index webhook_deliveries_endpoint_idx on webhook_deliveries (tenant_id, environment, endpoint_id, id desc);
create index webhook_deliveries_event_idx on webhook_deliveries (tenant_id, environment, event_id);
create index webhook_deliveries_txn_idx on webhook_deliveries (tenant_id, environment, transaction_id)
  where transaction_id is not null;
-- The worker queue spans all businesses, so this one index is not tenant-first.
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at)
  where status in ('pending', 'retrying', 'processing');

create table webhook_attempts (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  delivery_id uuid not null references webhook_deliveries(id),
  endpoint_id uuid not null,
  event_id uuid not null,
  attempt integer not null,
  trigger text not null check (trigger in ('scheduled', 'manual')),
  url text not null,
  -- Headers sent, without the signature.
  request_headers jsonb not null,
  status_code integer,
  duration_ms integer not null,
  response_headers jsonb,
  -- The first bytes of the response body (bounded by the worker).
  response_excerpt text,
  error text,
  created_at timestamptz not null default now()
);
create index webhook_attempts_delivery_idx on webhook_attempts (tenant_id, environment, delivery_id, id desc);
create index webhook_attempts_endpoint_idx on webhook_attempts (tenant_id, environment, endpoint_id, id desc);
