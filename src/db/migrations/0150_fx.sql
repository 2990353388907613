-- FX: simulated sandbox rates, quotes that lock a rate, and orders. Rates are numeric (quote
-- currency units per base unit, 12 decimals), amounts bigint minor units. Money moves only through
-- src/ledger (both legs in one posting through the per-currency fx_position accounts).

-- Sandbox market rates set by POST /v1/simulations/fx/rates, per business and environment.
create table fx_sandbox_rates (
  tenant_id uuid not null,
  environment text not null,
  base text not null,
  quote text not null,
  rate numeric(30, 12) not null check (rate > 0),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, environment, base, quote)
);

-- A quote locks a customer rate until expires_at; an order uses it at most once.
create table fx_quotes (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  from_currency text not null,
  to_currency text not null,
  direction text not null check (direction in ('BUY', 'SELL')),
  -- from_currency minor units (the base amount bought or sold)
  amount bigint not null check (amount > 0),
  -- to_currency minor units: received (SELL, rounded down) or paid (BUY, rounded up)
  to_amount bigint not null,
  mid_rate numeric(30, 12) not null,
  rate numeric(30, 12) not null,
  spread_bps integer not null,
  fee_bps integer not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  order_id uuid,
  created_at timestamptz not null default now()
);
create index fx_quotes_scope_idx on fx_quotes (tenant_id, environment, id);

create table fx_orders (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  -- null: an order between the business's own accounts
  customer_id uuid,
  order_type text not null check (order_type in ('market', 'limit')),
  side text not null check (side in ('buy', 'sell')),
  base text not null,
  quote text not null,
  -- base minor units: given (sell) or received (buy)
  amount bigint not null check (amount > 0),
  -- quote minor units: received (sell, rounded down) or paid (buy, rounded up); null until executed
  converted_amount bigint,
  -- customer rate (quote units per base unit) applied; null until executed
  rate numeric(30, 12),
  mid_rate numeric(30, 12),
  spread_bps integer not null,
  target_rate numeric(30, 12),
  fee_bps integer not null,
  -- in the source account's currency; null until executed
  fee bigint,
  status text not null check (status in ('pending', 'completed', 'cancelled', 'expired', 'rejected')),
  source_type text not null,
  source_id uuid not null,
  destination_type text not null,
  destination_id uuid not null,
  quote_id uuid,
  -- ledger hold on the source while a limit order waits
  hold_id uuid,
  ledger_transaction_id uuid,
  -- the source account's per-account transaction (GET /v1/transactions/{id})
  transaction_id uuid,
  rejection_reason text,
  executed_at timestamptz,
  expires_at timestamptz,
  -- when the limit-order worker last compared this order with the market
  checked_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz
);
create index fx_orders_list_idx on fx_orders (tenant_id, environment, id desc);
create index fx_orders_status_idx on fx_orders (tenant_id, environment, status, id desc);
create index fx_orders_customer_idx on fx_orders (tenant_id, environment, customer_id, id desc);
create index fx_orders_source_idx on fx_orders (tenant_id, environment, source_id, id desc);
create index fx_orders_destination_idx on fx_orders (tenant_id, environment, destination_id, id desc);
-- The limit-order worker scans only waiting orders, least recently checked first.
create index fx_orders_waiting_idx on fx_orders (checked_at nulls first, id) where status = 'pending';
create unique index fx_orders_quote_idx on fx_orders (tenant_id, environment, quote_id) where quote_id is not null;
