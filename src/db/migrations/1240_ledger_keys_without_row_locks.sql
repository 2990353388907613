-- The references of the money path's rows to ledger transactions and ledger accounts, checked
-- without a row lock. A foreign key's check takes FOR KEY SHARE on the row it finds, and a row
-- lock is a WAL record (about 54 bytes): on every transfer, its new ledger transaction, and each
-- ledger account it posts to once per batch. The lock keeps the referenced row from being deleted
-- or given another key before the commit; here nothing does either, ever, and the triggers on
-- ledger_accounts and ledger_transactions below say so to the database. With that, a check that
-- the row exists, without locking it, is as sound as the foreign key's, and PostgreSQL still
-- refuses a row that points at nothing:
-- - ledger_entries -> ledger_transactions, ledger_accounts;
-- - transactions -> ledger_transactions, ledger_accounts (migration 0501);
-- - transfers -> ledger_transactions.
-- What else serialises the same thing: the ledger transaction is inserted in the same database
-- transaction as the rows that name it (no one else can see it while it is locked), and every
-- ledger account a posting touches has its balance row held FOR UPDATE by that transaction.
-- Dropping a constraint rewrites no table; the new triggers check only new rows.
create or replace function ledger_keys_kept() returns trigger
language plpgsql as $$
begin
  raise exception '% rows are never deleted nor given another id (% refused)', tg_table_name, tg_op
    using errcode = 'insufficient_privilege';
end
$$;

create trigger ledger_accounts_keys_kept
  before update of id or delete on ledger_accounts
  for each row execute function ledger_keys_kept();
create trigger ledger_accounts_not_truncated
  before truncate on ledger_accounts
  for each statement execute function ledger_keys_kept();
create trigger ledger_transactions_keys_kept
  before update of id or delete on ledger_transactions
  for each row execute function ledger_keys_kept();
create trigger ledger_transactions_not_truncated
  before truncate on ledger_transactions
  for each statement execute function ledger_keys_kept();

-- Each checks after its row (at the end of the statement, as a foreign key's check: an entry
-- inserted in the same statement as its ledger transaction finds it).
create or replace function ledger_entries_refs_exist() returns trigger
language plpgsql as $$
begin
  if not exists (select 1 from ledger_transactions where id = new.transaction_id) then
    raise exception 'ledger_entries: no ledger transaction %', new.transaction_id using errcode = 'foreign_key_violation';
  end if;
  if not exists (select 1 from ledger_accounts where id = new.account_id) then
    raise exception 'ledger_entries: no ledger account %', new.account_id using errcode = 'foreign_key_violation';
  end if;
  return null;
end
$$;

create or replace function transactions_refs_exist() returns trigger
language plpgsql as $$
begin
  if new.ledger_transaction_id is not null
     and not exists (select 1 from ledger_transactions where id = new.ledger_transaction_id) then
    raise exception 'transactions: no ledger transaction %', new.ledger_transaction_id using errcode = 'foreign_key_violation';
  end if;
  if not exists (select 1 from ledger_accounts where id = new.account_id) then
    raise exception 'transactions: no ledger account %', new.account_id using errcode = 'foreign_key_violation';
  end if;
  return null;
end
$$;

create or replace function transfers_refs_exist() returns trigger
language plpgsql as $$
begin
  if not exists (select 1 from ledger_transactions where id = new.ledger_transaction_id) then
    raise exception 'transfers: no ledger transaction %', new.ledger_transaction_id using errcode = 'foreign_key_violation';
  end if;
  return null;
end
$$;

alter table ledger_entries drop constraint ledger_entries_transaction_id_fkey;
alter table ledger_entries drop constraint ledger_entries_account_id_fkey;
create trigger ledger_entries_refs_exist
  after insert or update of transaction_id, account_id on ledger_entries
  for each row execute function ledger_entries_refs_exist();

alter table transactions drop constraint transactions_ledger_transaction_id_fkey;
alter table transactions drop constraint transactions_account_id_fkey;
create trigger transactions_refs_exist
  after insert or update of ledger_transaction_id, account_id on transactions
  for each row execute function transactions_refs_exist();

alter table transfers drop constraint transfers_ledger_transaction_id_fkey;
create trigger transfers_refs_exist
  after insert or update of ledger_transaction_id on transfers
  for each row when (new.ledger_transaction_id is not null) execute function transfers_refs_exist();
