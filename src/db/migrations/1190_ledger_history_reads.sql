-- Reads of an account's past: its balance as of an instant, a period's opening and closing
-- balances and totals, and its statement. An entry's id is a UUIDv7 drawn while the posting holds
-- the account's balance row, so per account the id order is the order of balance_after.
-- - The balance as of T is the balance_after of the account's last entry with an id below the
--   smallest UUIDv7 after T: one index seek, whatever the account's history. amount and
--   balance_after are carried in the index so a period's totals are an index-only range scan
--   over that period's entries and nothing before it.
-- - Funds held as of T are the holds created before T that were still pending at T: the ones
--   pending now (ledger_holds_debit_idx) and the ones finished after T (this partial index, one
--   entry per finished hold, written when it finishes).
create index ledger_entries_account_history_idx on ledger_entries (account_id, id) include (amount, balance_after);
create index ledger_holds_finished_idx on ledger_holds (debit_account_id, updated_at) where status <> 'pending';
