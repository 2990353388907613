-- The payout connectors' own state: what was submitted to a rail and what the rail answered.
-- The sandbox connector settles rows on its own once `settle_after` has passed; the live manual
-- connector leaves `settle_after` null and waits for an operator (CLI `payouts settle|fail`).
-- A row moves submitted -> settled | failed, settled -> returned, each once (conditional updates).
create table rail_payouts (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  transfer_id uuid not null,
  connector text not null,
  rail text not null,
  amount bigint not null check (amount > 0),
  currency text not null,
  payee jsonb not null,
  state text not null default 'submitted' check (state in ('submitted', 'settled', 'failed', 'returned')),
  reason text,
  settle_after timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index rail_payouts_transfer_idx on rail_payouts (tenant_id, environment, transfer_id);
-- The sandbox settlement job scans due submitted rows across businesses.
create index rail_payouts_due_idx on rail_payouts (settle_after) where state = 'submitted' and settle_after is not null;
