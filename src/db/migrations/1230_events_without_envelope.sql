-- Events stored without their webhook envelope. `payload` held the whole envelope (event_id,
-- tenant_id, environment, timestamp, event_type, event_category, event_group_id, event_data),
-- six of which the row's own columns already hold, so every event wrote them twice to the heap
-- and the WAL. New rows keep only what the columns do not say:
--   event_data   the event's data, as the envelope's event_data;
--   occurred_at  the envelope's timestamp. It is not created_at: the application stamps it
--                (a test clock's time during its pass, core/clock.ts), the database stamps
--                created_at with its transaction's start.
-- and leave payload null. Readers rebuild the envelope from the columns in one SQL expression
-- (webhooks/outbox.ts eventEnvelope), which returns payload where it is set: rows written before
-- this migration keep their envelope and are read as they were. So nothing here rewrites the
-- table (it can hold millions of rows): dropping NOT NULL and adding nullable columns without a
-- default only change the catalog, and the check is NOT VALID (old rows, which all have their
-- payload, are not scanned). occurred_at comes before event_data so that it follows created_at
-- on an 8-byte boundary (no padding after a variable-length jsonb).
-- Processes of the previous version read payload alone: stop them before new ones write events.
alter table events alter column payload drop not null;
alter table events add column occurred_at timestamptz;
alter table events add column event_data jsonb;
alter table events add constraint events_envelope_or_data
  check (payload is not null or (event_data is not null and occurred_at is not null)) not valid;
