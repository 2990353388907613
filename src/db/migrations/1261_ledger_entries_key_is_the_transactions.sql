-- A ledger entry's primary key becomes (transaction_id, id), and ledger_entries_transaction_idx
-- (transaction_id) goes: the key finds a ledger transaction's entries as that index did, so each
-- entry paid for two B-tree insertions where one serves. Nothing finds an entry by its id alone:
-- entries are read by their ledger transaction (ledger/repo.ts entriesOf, the operator console's
-- entries of a payout) or by account (ledger_entries_account_history_idx, migration 1190);
-- reconciliation reads them all. Nothing references the table. The id alone is no longer a key the database checks: it is a UUIDv7
-- drawn for the entry, as before.
alter table ledger_entries drop constraint ledger_entries_pkey;
alter table ledger_entries add constraint ledger_entries_pkey primary key (transaction_id, id);
drop index ledger_entries_transaction_idx;
