-- The reference index of account transactions keys on the reference alone. A reference is an id
-- this system draws for the movement (a transfer, a collection, an FX order, a card
-- authorization), unique across businesses: its business and environment in the key only made
-- each entry 24 bytes wider, on both account transactions of every transfer. The readers still
-- give them (the reference filter, the dashboard's search, a statement's lines: ledger/history.ts)
-- and check them on the two or three rows the reference finds.
drop index transactions_reference_idx;
create index transactions_reference_idx on transactions (reference);
