-- A change of an account's status holds the account's balance row until it commits. A money
-- movement that locked the balance rows of its accounts can then read the account rows without a
-- row lock: a freeze or a close either waits for the movement's commit, or commits first and the
-- movement, which reads the rows after its balance locks (a new snapshot), sees the new status.
-- Before this, the movement share-locked each account row, and a row lock is a WAL record
-- (about 54 bytes) for each account of every transfer (modules/transfers/locks.ts lockedAhead).
-- The accounts service already locks the balance row before a status change (it checks a close
-- at zero); this trigger makes it a rule of the table, whoever updates it. A balance row's lock is
-- an advisory lock on ledger_balance_lock_key(account id), the one definition of its key, which
-- src/ledger/repo.ts balanceLock takes too (a SQL function of one expression: inlined).
-- Lock order is unchanged: the account row (the update's own lock), then its balance row.
-- Processes of the previous version lock balance rows FOR UPDATE and share-lock account rows,
-- which these locks do not exclude: stop them before this runs (docs/scaling.md).
create or replace function ledger_balance_lock_key(account_id uuid) returns bigint
language sql immutable parallel safe
return hashtextextended('ledger_balance:' || account_id::text, 0);

create or replace function account_status_holds_its_balance() returns trigger
language plpgsql as $$
begin
  perform pg_advisory_xact_lock(ledger_balance_lock_key(new.id));
  return new;
end
$$;

create trigger account_status_holds_its_balance
  before update of status on accounts
  for each row when (old.status is distinct from new.status)
  execute function account_status_holds_its_balance();
