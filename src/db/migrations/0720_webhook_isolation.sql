-- Webhook delivery that isolates endpoints (issue #15).
-- A circuit per endpoint: after enough consecutive failed attempts its deliveries are not
-- claimed until circuit_open_until, so a dead receiver holds no worker.
alter table webhook_endpoints add column consecutive_failures integer not null default 0;
alter table webhook_endpoints add column circuit_open_until timestamptz;
-- When each attempt was due and when its request started (the retry schedule is read from them).
alter table webhook_attempts add column scheduled_at timestamptz;
alter table webhook_attempts add column started_at timestamptz;
-- In-flight deliveries per endpoint (the per-endpoint concurrency limit counts them).
create index webhook_deliveries_processing_idx on webhook_deliveries (endpoint_id) where status = 'processing';
