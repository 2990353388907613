-- The webhook fan-out's queue: one row per event whose deliveries are not created yet, written in
-- the same statement as the event and deleted by the fan-out in the transaction that creates the
-- deliveries. Before, the fan-out marked each event with `fanned_out_at`, a column in the
-- predicate of a partial index, so PostgreSQL could not update the row in place (no HOT update):
-- every event was written twice, its ~1 KB payload and three index entries again (about 1.9 KB
-- more WAL per transfer with the workers on). A narrow row inserted and deleted costs a fraction.
-- No foreign key: the event and its queue row are inserted by one statement, and a foreign key
-- check would cost a lookup per event on the money path; the fan-out drops a queue row whose event
-- is missing.
create table event_fanout_queue (
  event_id uuid primary key
);

insert into event_fanout_queue (event_id) select id from events where fanned_out_at is null;
drop index events_fanout_idx;
alter table events drop column fanned_out_at;
