-- Card movements are transactions on the card's own balance: their account_id is the card's
-- ledger account (id = card id), not a row of `accounts`. Every account and every card has a
-- ledger account with its own id, so the reference moves to ledger_accounts and stays a real FK.
alter table transactions drop constraint transactions_account_id_fkey;
alter table transactions add constraint transactions_account_id_fkey
  foreign key (account_id) references ledger_accounts(id);
