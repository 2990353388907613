-- Issue #15: idempotency claims follow the process doing the work. Each server or worker process
-- registers itself and refreshes its heartbeat every second; a claim whose owner stopped
-- heartbeating (killed, crashed, host gone) is taken over by a retry at once instead of after
-- its lease. A clean shutdown deletes its row.
create table process_instances (
  id uuid primary key,
  pid integer not null,
  host text not null,
  started_at timestamptz not null default now(),
  heartbeat_at timestamptz not null default now()
);

-- The process that claimed the key (null: claimed before this migration; only the lease counts).
alter table idempotency_keys add column owner_id uuid;
