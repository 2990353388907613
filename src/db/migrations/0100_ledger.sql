-- Ledger: double-entry bookkeeping. Only src/ledger/ writes these tables.
-- Sign convention: an entry's amount is signed minor units, credit positive. A ledger account's
-- posted balance is the sum of its entries; customer accounts hold positive balances and system
-- accounts (settlement, fx_position, ...) mirror them with negative ones.

create table ledger_accounts (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  currency text not null,
  -- 'account' (a customer's or the business's account, a card), or 'system'
  kind text not null check (kind in ('account', 'system')),
  -- settlement | fx_position | fee_income | card_settlement | suspense (system accounts only)
  system_role text check (system_role in ('settlement', 'fx_position', 'fee_income', 'card_settlement', 'suspense')),
  created_at timestamptz not null default now(),
  check ((kind = 'system') = (system_role is not null))
);
create index ledger_accounts_scope_idx on ledger_accounts (tenant_id, environment, id);
create unique index ledger_system_accounts_idx on ledger_accounts (tenant_id, environment, currency, system_role)
  where system_role is not null;

-- One row per ledger account, changed in the same transaction as its entries.
create table ledger_balances (
  account_id uuid primary key references ledger_accounts(id),
  tenant_id uuid not null,
  environment text not null,
  currency text not null,
  posted bigint not null default 0,
  pending_debits bigint not null default 0,
  pending_credits bigint not null default 0,
  -- System accounts may go below zero; customer accounts never below zero available.
  allow_negative boolean not null,
  version bigint not null default 0,
  -- Last line of defence behind the conditional updates in ledger/repo.ts.
  check (allow_negative or posted - pending_debits >= 0),
  check (pending_debits >= 0 and pending_credits >= 0)
);
create index ledger_balances_scope_idx on ledger_balances (tenant_id, environment, account_id);

create table ledger_transactions (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  kind text not null,
  reference text,
  metadata jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create index ledger_transactions_scope_idx on ledger_transactions (tenant_id, environment, id desc);
create index ledger_transactions_reference_idx on ledger_transactions (tenant_id, environment, reference)
  where reference is not null;

-- Append-only: never updated, never deleted; corrections are new reversing transactions.
create table ledger_entries (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  transaction_id uuid not null references ledger_transactions(id),
  account_id uuid not null references ledger_accounts(id),
  currency text not null,
  amount bigint not null check (amount <> 0),
  -- The account's posted balance right after this entry (balance_before = balance_after - amount).
  balance_after bigint not null,
  created_at timestamptz not null default now()
);
create index ledger_entries_account_idx on ledger_entries (account_id, id);
create index ledger_entries_transaction_idx on ledger_entries (transaction_id);

-- Two-phase holds (TigerBeetle's pending transfers): pending -> posted | voided, at most once.
create table ledger_holds (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  debit_account_id uuid not null references ledger_accounts(id),
  credit_account_id uuid not null references ledger_accounts(id),
  currency text not null,
  amount bigint not null check (amount > 0),
  status text not null default 'pending' check (status in ('pending', 'posted', 'voided')),
  posted_amount bigint,
  kind text not null,
  reference text,
  metadata jsonb not null default '{}'::jsonb,
  -- The ledger transaction that posted it (null while pending or when voided).
  transaction_id uuid references ledger_transactions(id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index ledger_holds_scope_idx on ledger_holds (tenant_id, environment, id desc);
create index ledger_holds_debit_idx on ledger_holds (debit_account_id, id) where status = 'pending';
