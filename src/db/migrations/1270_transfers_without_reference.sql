-- A transfer's reference is its id: every transfer was written with reference = id (internal
-- transfers, card fundings, payouts: modules/transfers baseTransferRow and transferRow), so the
-- column said nothing the key does not, in 37 bytes of every transfer's row. The API's
-- `reference` is the id (modules/transfers/format.ts), as it always was; the dashboard shows the id.
-- Dropping a column changes only the catalog: old rows keep their bytes, unread. Processes of the
-- previous version write the column: stop them before this runs.
alter table transfers drop column reference;
