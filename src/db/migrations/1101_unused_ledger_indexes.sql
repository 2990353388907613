-- Indexes the money path paid for on every posting and nothing read (three of the ~34 index
-- insertions of a transfer):
-- - ledger transactions are read by id only; no query lists them by business or finds one by
--   reference (the API's lists read transfers and account transactions, indexed on their own);
-- - ledger entries are read by transaction; an account's history is its account transactions
--   (`transactions_account_idx`), and `ledger reconcile` sums entries in one pass, by account.
-- test/db/write-path-indexes.test.ts lists every index the write path keeps and the query it serves.
drop index ledger_transactions_scope_idx;
drop index ledger_transactions_reference_idx;
drop index ledger_entries_account_idx;
