-- An Idempotency-Key record of the batch path is now inserted once, completed with its answer
-- (http/idempotency-batch.ts), instead of claimed by a narrow insert and completed by an update.
-- Migration 1105 kept 80 % of each page free for those updates; an insert of a completed row of
-- about 930 bytes then found room on no page but an empty one: one record a page, 8 KiB of heap a
-- key. The table fills its pages again. (A lone request's claim, idempotency.ts, is still completed
-- by an update, which is HOT only while its page has room.)
alter table idempotency_keys reset (fillfactor);
