-- The bank file cut's claim (modules/bank-files/repo.ts, unfiledPayouts): the submitted payouts
-- of a connection's environment and currency, oldest first, a file's worth at a time. Without
-- this index the cut walked every payout of its environment ever made (rail_payouts_transfer_idx
-- on environment alone, then a filter on the state) once per cut, a cost that grew with history.
-- A payout leaves the index when it settles; the state is in rail_payouts_due_idx's predicate
-- already, so its updates were not HOT before either.
create index rail_payouts_submitted_idx on rail_payouts (environment, currency, created_at, id) where state = 'submitted';
