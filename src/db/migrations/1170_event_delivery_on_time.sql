-- Webhook delivery that keeps up with slow receivers, event sequences and the events API.

-- An endpoint's circuit opens only when it has not succeeded for a while (not on a run of
-- failures alone: an endpoint that fails half its requests has runs of ten now and then).
alter table webhook_endpoints add column last_success_at timestamptz;
-- Requests in flight that the endpoint takes; null: the configured default. Halved while it
-- refuses (connection refused, 429, 503), raised by one per success back to the default.
alter table webhook_endpoints add column slot_limit integer;

-- A number per business and environment, given to each event by the fan-out in the order
-- events become visible (committed), so a receiver can find gaps. Kept beside the event
-- rather than in it: the event row is written once and never updated.
create table event_sequences (
  event_id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  sequence bigint not null,
  unique (tenant_id, environment, sequence)
);
create table event_sequence_counters (
  tenant_id uuid not null,
  environment text not null,
  last_sequence bigint not null,
  primary key (tenant_id, environment)
);

-- GET /v1/events filters by type (and by resource: events_group_idx) in id order.
create index events_type_idx on events (tenant_id, environment, event_type, id);

-- Replays: one open replay per endpoint and time range at a time.
create table webhook_replays (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  endpoint_id uuid not null references webhook_endpoints(id),
  -- failed: deliveries that failed; all: every event of the range the endpoint subscribes to.
  scope text not null check (scope in ('failed', 'all')),
  range_from timestamptz not null,
  range_to timestamptz not null,
  queued integer not null,
  created_at timestamptz not null default now()
);
create index webhook_replays_endpoint_idx on webhook_replays (tenant_id, environment, endpoint_id, id desc);

-- The claim reads an endpoint's due first attempts and its due retries apart (first attempts go
-- first), each from its own index, so neither kind's backlog is read to find the other.
create index webhook_deliveries_first_due_idx on webhook_deliveries (endpoint_id, next_attempt_at) where status = 'pending';
create index webhook_deliveries_retry_due_idx on webhook_deliveries (endpoint_id, next_attempt_at)
  where status in ('retrying', 'processing');
