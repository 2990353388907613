-- The purge of expired Idempotency-Keys finds them through a BRIN index instead of a B-tree. A
-- record's expiry is its insertion time plus the retention, so it grows with the table's physical
-- order, and a block range's minimum and maximum say all the purge needs: the ranges that hold
-- anything expired, at the table's start. The B-tree paid an insertion and its WAL (about 64
-- bytes) on every request with a key; a BRIN index writes nothing while a record goes into a range
-- not yet summarized, the table's tail, and a range is summarized once, when it fills
-- (autosummarize) or at the next vacuum. A range not yet summarized is always scanned: the newest
-- records, which the purge's recheck passes over.
drop index idempotency_keys_expiry_idx;
create index idempotency_keys_expiry_idx on idempotency_keys using brin (expires_at) with (pages_per_range = 32, autosummarize = on);
