-- ISO 20022 file exchange with the platform's sponsor banks. These tables belong to the operator,
-- not to a business: a connection holds the money of every business of its environment in its
-- currency (the ledger's `settlement` accounts of that environment and currency).

create table bank_connections (
  id uuid primary key,
  environment text not null check (environment in ('sandbox', 'live')),
  name text not null,
  -- The platform's own account at the bank (the debtor of payouts, the creditor of inbound credits).
  account_name text not null,
  iban text,
  account_number text,
  bic text,
  bank_code text,
  currency text not null,
  rails jsonb not null,
  -- 'folder' (outbox/inbox directories) or 'sftp' (host-to-host, key auth).
  transport text not null check (transport in ('folder', 'sftp')),
  transport_config jsonb not null,
  status text not null default 'active' check (status in ('active', 'disabled')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (iban is not null or account_number is not null)
);
-- One connection holds an environment's money in a currency, so its settlement balance is the bank's.
create unique index bank_connections_currency_idx on bank_connections (environment, currency) where status = 'active';

-- Files exchanged with a bank, both ways.
create table bank_files (
  id uuid primary key,
  connection_id uuid not null references bank_connections(id),
  direction text not null check (direction in ('out', 'in')),
  kind text not null check (kind in ('pain.001', 'pain.002', 'camt.053', 'camt.054')),
  message_id text not null,
  filename text not null,
  checksum text not null,
  size bigint not null,
  -- out: created -> delivered; in: imported
  status text not null check (status in ('created', 'delivered', 'imported')),
  content text,
  summary jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now(),
  delivered_at timestamptz
);
create unique index bank_files_message_idx on bank_files (connection_id, direction, kind, message_id);
create index bank_files_list_idx on bank_files (connection_id, id desc);
create index bank_files_undelivered_idx on bank_files (connection_id) where status = 'created';

-- A payout in an outbound pain.001: once (the unique transfer), under its EndToEndId.
create table bank_file_payouts (
  transfer_id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  file_id uuid not null references bank_files(id),
  end_to_end_id text not null unique,
  amount bigint not null,
  currency text not null,
  -- queued (in a file not yet delivered) -> submitted (delivered) -> accepted | rejected | returned
  status text not null default 'queued' check (status in ('queued', 'submitted', 'accepted', 'rejected', 'returned')),
  reason text,
  updated_at timestamptz not null default now()
);
create index bank_file_payouts_file_idx on bank_file_payouts (file_id);

-- Every entry (or transaction detail) of an imported camt file, once per bank reference.
create table bank_entries (
  id uuid primary key,
  connection_id uuid not null references bank_connections(id),
  entry_key text not null,
  file_id uuid not null references bank_files(id),
  direction text not null check (direction in ('credit', 'debit')),
  amount bigint not null,
  currency text not null,
  booking_date date,
  -- credited | payout_returned | payout_confirmed | exception | ignored
  outcome text not null,
  tenant_id uuid,
  environment text,
  account_id uuid,
  transfer_id uuid,
  details jsonb not null default '{}'::jsonb,
  created_at timestamptz not null default now()
);
create unique index bank_entries_key_idx on bank_entries (connection_id, entry_key);

-- Entries that matched nothing: an operator assigns them to an account or returns them to the sender.
create table bank_exceptions (
  id uuid primary key,
  connection_id uuid not null references bank_connections(id),
  entry_id uuid not null references bank_entries(id),
  direction text not null,
  amount bigint not null,
  currency text not null,
  payer_name text,
  creditor_account text,
  reference text,
  reason text not null,
  status text not null default 'open' check (status in ('open', 'assigned', 'returned')),
  tenant_id uuid,
  account_id uuid,
  resolved_note text,
  created_at timestamptz not null default now(),
  resolved_at timestamptz
);
create index bank_exceptions_open_idx on bank_exceptions (connection_id, id) where status = 'open';

-- Each statement's closing balance against the ledger's settlement accounts at its date.
create table bank_reconciliations (
  id uuid primary key,
  connection_id uuid not null references bank_connections(id),
  file_id uuid not null references bank_files(id),
  statement_id text not null,
  statement_date date not null,
  currency text not null,
  bank_balance bigint not null,
  ledger_balance bigint not null,
  difference bigint not null,
  status text not null check (status in ('agreed', 'break')),
  explanation jsonb not null default '[]'::jsonb,
  created_at timestamptz not null default now()
);
create index bank_reconciliations_list_idx on bank_reconciliations (connection_id, id desc);

-- Inbound credits find the account the bank details were given to (an IBAN lives in bank_details).
create index accounts_iban_idx on accounts ((bank_details ->> 'iban')) where bank_details ->> 'iban' is not null;
