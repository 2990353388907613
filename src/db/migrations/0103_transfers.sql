-- Transfers: the business object behind a money movement. Internal transfers complete at once;
-- other destination types (cards, external accounts) add their own flow on the same table.
create table transfers (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  reference text not null,
  client_reference text,
  description text not null default '',
  customer_id uuid,
  destination_customer_id uuid,
  source_type text not null,
  source_id uuid not null,
  destination_type text not null,
  destination_id uuid,
  rail text,
  currency text not null,
  amount bigint not null check (amount > 0),
  fee bigint not null default 0 check (fee >= 0),
  local_amount bigint,
  local_currency text,
  rate numeric,
  status text not null check (status in ('pending', 'processing', 'completed', 'failed', 'returned')),
  failure_reason text,
  ledger_transaction_id uuid references ledger_transactions(id),
  -- The source account's transaction (transactions table).
  transaction_id uuid,
  -- A two-phase movement's ledger hold (payouts), if any.
  hold_id uuid,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index transfers_list_idx on transfers (tenant_id, environment, id desc);
create index transfers_status_idx on transfers (tenant_id, environment, status, id desc);
create index transfers_source_idx on transfers (tenant_id, environment, source_id, id desc);
create index transfers_destination_idx on transfers (tenant_id, environment, destination_id, id desc)
  where destination_id is not null;
create index transfers_customer_idx on transfers (tenant_id, environment, customer_id, id desc)
  where customer_id is not null;
create index transfers_destination_customer_idx on transfers (tenant_id, environment, destination_customer_id, id desc)
  where destination_customer_id is not null;
