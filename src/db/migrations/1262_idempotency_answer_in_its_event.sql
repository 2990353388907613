-- An Idempotency-Key record whose answer is an event's data points at the event instead of
-- holding the answer's text a second time. A transfer's answer is the transfer, which its event
-- (transfer.status.completed or .pending) already stores, in the same transaction: the record's
-- copy was about 640 bytes of heap and WAL a transfer (http/idempotency-batch.ts). A replay reads
-- the event's data and writes it with the route's response schema, which writes keys in the
-- schema's order whatever the object's order (http/serializer.ts): the same text, byte for byte.
-- No foreign key: events are never deleted, and the check would cost every insert a probe of the
-- events' primary key. Records written before keep their text (response_body) and are read as they were.
alter table idempotency_keys add column response_event_id uuid;
