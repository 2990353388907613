-- The webhook fan-out's queue: one row per event whose deliveries are not created yet, deleted by
-- the fan-out in the transaction that creates the deliveries. Before, the fan-out marked each
-- event with `fanned_out_at`, a column in the predicate of a partial index, so PostgreSQL could
-- not update the row in place (no HOT update): every event was written twice, its ~1 KB payload
-- and three index entries again (about 1.9 KB more WAL per transfer with the workers on). A narrow
-- row inserted and deleted costs a fraction.
-- No foreign key: a check would cost a lookup per event on the money path; the fan-out drops a
-- queue row whose event is missing.
create table event_fanout_queue (
  event_id uuid primary key
);

-- Every event is queued by the database, in the statement that inserts it: one trigger call per
-- statement (a batch's events are one statement), not per row. Whoever writes the event, it is
-- queued, including a process of the previous version still running while a new one migrates
-- (its inserts name only `events`): no event is left without its webhooks.
create function enqueue_events_for_fanout() returns trigger language plpgsql as $$
begin
  insert into event_fanout_queue (event_id) select id from inserted_events;
  return null;
end $$;
create trigger events_enqueue_for_fanout after insert on events
  referencing new table as inserted_events
  for each statement execute function enqueue_events_for_fanout();

insert into event_fanout_queue (event_id) select id from events where fanned_out_at is null;
drop index events_fanout_idx;
alter table events drop column fanned_out_at;
