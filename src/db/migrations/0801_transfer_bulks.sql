-- Bulk transfers (POST /v1/transfers/bulk): one row per accepted file, with each item's result.
-- Every item is its own transfer (in the transfers table); the row records what each one got.
create table transfer_bulks (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  description text not null default '',
  total_items integer not null,
  succeeded integer not null,
  failed integer not null,
  items jsonb not null,
  created_at timestamptz not null default now()
);
