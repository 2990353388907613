-- API request log: one row per /v1 request of a business, written in the background by
-- src/modules/request-log (buffered, multi-row inserts), read by the dashboard, deleted after the
-- retention period by a worker. Bodies are stored already redacted (src/lib/redact.ts).
create table api_request_log (
  -- UUIDv7 taken when the request arrived: newest-first is id-descending, date filters are id bounds.
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null check (environment in ('sandbox', 'live')),
  request_id text not null,
  method text not null,
  path text not null,
  query text,
  status integer not null,
  -- status / 100 (2, 4, 5): the dashboard's most used filter, with its own index.
  status_class smallint not null,
  duration_ms integer not null,
  idempotency_key text,
  idempotency_replayed boolean not null default false,
  -- The key as the keys page shows it (sk_sandbox_…abcd), never the key.
  key_prefix text,
  request_body text,
  response_body text,
  created_at timestamptz not null
);
create index api_request_log_tenant_idx on api_request_log (tenant_id, environment, id desc);
create index api_request_log_request_id_idx on api_request_log (tenant_id, environment, request_id);
create index api_request_log_status_idx on api_request_log (tenant_id, environment, status_class, id desc);
create index api_request_log_path_idx on api_request_log (tenant_id, environment, path text_pattern_ops, id desc);

-- The dashboard shows a resource's events (a transfer's status timeline, a request's events).
create index events_group_idx on events (tenant_id, environment, event_group_id, id);
