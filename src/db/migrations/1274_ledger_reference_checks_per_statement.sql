-- The reference checks of migration 1240 on inserted rows, once per statement instead of once per
-- row. A batch of transfers inserts its ledger entries, account transactions and transfers in one
-- statement each, and a row trigger ran a PL/pgSQL call and its lookups for every row: five calls
-- a transfer, about a sixth of PostgreSQL's time on the money path (pg_stat_user_functions). A
-- statement trigger reads the statement's new rows as a table and looks them all up at once: three
-- calls a batch, whatever its size. The checks are the same (every row's ledger transaction and
-- ledger account exists, at the end of the statement, as a foreign key's check) and so are their
-- errors. Updates of a reference keep their row triggers: PostgreSQL gives no transition table to
-- a trigger on some columns only, and nothing on the money path updates these columns.
--
-- Each lookup probes the referenced table's primary key whatever its size: a plan made while the
-- table was small (a new database) and kept by the session must not scan it once it has grown.

create function ledger_entries_added_refs_exist() returns trigger
language plpgsql set enable_seqscan = off as $$
declare
  missing uuid;
begin
  select n.transaction_id into missing from added n
  where not exists (select 1 from ledger_transactions t where t.id = n.transaction_id) limit 1;
  if found then
    raise exception 'ledger_entries: no ledger transaction %', missing using errcode = 'foreign_key_violation';
  end if;
  select n.account_id into missing from added n
  where not exists (select 1 from ledger_accounts a where a.id = n.account_id) limit 1;
  if found then
    raise exception 'ledger_entries: no ledger account %', missing using errcode = 'foreign_key_violation';
  end if;
  return null;
end
$$;

create function transactions_added_refs_exist() returns trigger
language plpgsql set enable_seqscan = off as $$
declare
  missing uuid;
begin
  select n.ledger_transaction_id into missing from added n
  where n.ledger_transaction_id is not null
    and not exists (select 1 from ledger_transactions t where t.id = n.ledger_transaction_id) limit 1;
  if found then
    raise exception 'transactions: no ledger transaction %', missing using errcode = 'foreign_key_violation';
  end if;
  select n.account_id into missing from added n
  where not exists (select 1 from ledger_accounts a where a.id = n.account_id) limit 1;
  if found then
    raise exception 'transactions: no ledger account %', missing using errcode = 'foreign_key_violation';
  end if;
  return null;
end
$$;

create function transfers_added_refs_exist() returns trigger
language plpgsql set enable_seqscan = off as $$
declare
  missing uuid;
begin
  select n.ledger_transaction_id into missing from added n
  where n.ledger_transaction_id is not null
    and not exists (select 1 from ledger_transactions t where t.id = n.ledger_transaction_id) limit 1;
  if found then
    raise exception 'transfers: no ledger transaction %', missing using errcode = 'foreign_key_violation';
  end if;
  return null;
end
$$;

drop trigger ledger_entries_refs_exist on ledger_entries;
create trigger ledger_entries_added_refs_exist
  after insert on ledger_entries referencing new table as added
  for each statement execute function ledger_entries_added_refs_exist();
create trigger ledger_entries_refs_exist
  after update of transaction_id, account_id on ledger_entries
  for each row execute function ledger_entries_refs_exist();

drop trigger transactions_refs_exist on transactions;
create trigger transactions_added_refs_exist
  after insert on transactions referencing new table as added
  for each statement execute function transactions_added_refs_exist();
create trigger transactions_refs_exist
  after update of ledger_transaction_id, account_id on transactions
  for each row execute function transactions_refs_exist();

drop trigger transfers_refs_exist on transfers;
create trigger transfers_added_refs_exist
  after insert on transfers referencing new table as added
  for each statement execute function transfers_added_refs_exist();
create trigger transfers_refs_exist
  after update of ledger_transaction_id on transfers
  for each row when (new.ledger_transaction_id is not null) execute function transfers_refs_exist();
