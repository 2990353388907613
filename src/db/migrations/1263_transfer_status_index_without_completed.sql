-- The transfers' status index keeps only the transfers that are not completed. Nearly every
-- transfer is completed when it is written (an internal transfer, a card funding), and each paid
-- an entry of this index, about 180 bytes of WAL a transfer with its page splits, for a filter
-- that finds them as well by walking the list's index (tenant_id, environment, id desc), where
-- most rows match. Finding the few pending, processing, failed or returned transfers among many
-- completed ones is what the index is for. The list states the predicate as a literal when it
-- filters on another status (transfers/repo.ts listTransfers): the planner uses a partial index
-- only then.
drop index transfers_status_idx;
create index transfers_status_idx on transfers (tenant_id, environment, status, id desc) where status <> 'completed';
