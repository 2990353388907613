-- A transfer's primary key becomes (tenant_id, environment, id), and the list's index (tenant_id,
-- environment, id desc) goes: the key is that index, as migration 1260 did for account
-- transactions, so each transfer paid two B-tree insertions that said the same thing.
-- Every read of a transfer by id gives its business and environment (the API's, the dashboard's,
-- rails/repo.ts claimDuePayouts), except the payout jobs' and the operator console's, which read
-- payouts of any business by id alone (transfers/repo.ts lockTransfers and findTransfersByIds, the
-- bank file cut; ops/repo.ts findTransferById): they name destination_type = 'external_account'
-- and walk a unique index of payouts alone, which an internal transfer does not write. Nothing
-- references the table. Ids are UUIDv7 drawn by this system, unique without the business in the key.
create unique index transfers_payout_id_idx on transfers (id) where destination_type = 'external_account';
alter table transfers drop constraint transfers_pkey;
alter table transfers add constraint transfers_pkey primary key (tenant_id, environment, id);
drop index transfers_list_idx;
