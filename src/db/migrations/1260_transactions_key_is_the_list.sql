-- An account transaction's primary key becomes (tenant_id, environment, id), and the list's index
-- (tenant_id, environment, id desc) goes: the key is that index, so each transfer's two account
-- transactions paid for two B-tree insertions that said the same thing (migration 1103 did this
-- for api_request_log). A B-tree is scanned backwards for the newest-first list.
-- Every read of an account transaction by id gives its business and environment: the API's and the
-- dashboard's (scoped), and the payout batch's pending transactions (transactions/repo.ts
-- pendingAccounts and completePending, given each payout's scope). Nothing references the table.
alter table transactions drop constraint transactions_pkey;
alter table transactions add constraint transactions_pkey primary key (tenant_id, environment, id);
drop index transactions_list_idx;
