-- A balance row's version counter is no longer kept. Nothing read it (the balance locks serialise
-- every writer: ledger/repo.ts balanceLock), and every balance update bumped it. PostgreSQL logs an
-- update on the same page as the bytes between the row's unchanged prefix and its unchanged
-- suffix: the counter, the last column, always changed, so the suffix was empty and every update
-- logged the pending columns too, 32 bytes more, twice a transfer.
-- The column is renamed, not dropped: a dropped column is stored as a null in every new row
-- version, and these rows have no other null, so each would gain a null bitmap (8 bytes, logged
-- with every update). Renaming changes only the catalog; nothing writes or reads retired_version.
-- Processes of the previous version bump `version`: stop them before this runs.
alter table ledger_balances rename column version to retired_version;
comment on column ledger_balances.retired_version is
  'No longer written or read (migration 1272): the balance locks serialise writers. Kept so rows need no null bitmap.';
