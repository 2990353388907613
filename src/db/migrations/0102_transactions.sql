-- Transactions as the API shows them: one row per account touched by a movement (a transfer
-- between two accounts is two rows), written in the same database transaction as the ledger
-- posting it describes. balance_before/after come from the ledger entries.
create table transactions (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  account_id uuid not null references accounts(id),
  customer_id uuid,
  ledger_transaction_id uuid references ledger_transactions(id),
  -- The business object that moved the money (a transfer id, a funding reference).
  reference text not null,
  client_reference text,
  client_metadata text,
  external_id text,
  direction text not null check (direction in ('in', 'out')),
  currency text not null,
  amount bigint not null check (amount >= 0),
  fee bigint not null default 0 check (fee >= 0),
  balance_before bigint,
  balance_after bigint,
  channel text not null,
  transaction_type text not null,
  status text not null check (status in ('pending', 'completed', 'failed', 'waiting_approval')),
  description text not null default '',
  sending_account_id uuid,
  receiving_account_id uuid,
  card_id uuid,
  payment_link_id uuid,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index transactions_list_idx on transactions (tenant_id, environment, id desc);
create index transactions_account_idx on transactions (tenant_id, environment, account_id, id desc);
create index transactions_customer_idx on transactions (tenant_id, environment, customer_id, id desc)
  where customer_id is not null;
create index transactions_card_idx on transactions (tenant_id, environment, card_id, id desc) where card_id is not null;
create index transactions_reference_idx on transactions (tenant_id, environment, reference);
