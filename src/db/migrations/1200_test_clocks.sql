-- Sandbox test clocks. A clock's frozen_time only moves forward; an advance sets target_time and
-- status 'advancing', and the clock worker walks the clock to it (status back to 'ready'). A
-- sandbox environment attached to a clock (attached: at most one clock per environment) is left
-- out of the real-time workers: only its clock's advances fire what falls due for it.
create table test_clocks (
  id uuid primary key,
  tenant_id uuid not null references tenants(id),
  environment text not null check (environment = 'sandbox'),
  name text,
  frozen_time timestamptz not null,
  target_time timestamptz,
  status text not null check (status in ('ready', 'advancing')),
  attached boolean not null default false,
  lease_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((status = 'advancing') = (target_time is not null))
);
create unique index test_clocks_attached_idx on test_clocks (tenant_id, environment) where attached;
create index test_clocks_scope_idx on test_clocks (tenant_id, environment, id);
create index test_clocks_advancing_idx on test_clocks (updated_at) where status = 'advancing';
