-- A logged request whose answer is an event's data points at the event instead of holding the
-- answer's text a second time, as its Idempotency-Key record does (migration 1262): a transfer's
-- answer is the transfer its event stores. The row's copy was about 670 bytes of heap and WAL a
-- transfer. The request's detail writes the event's data as the route wrote its answer
-- (dashboard/request-routes.ts). Events are never deleted and the log's rows are, so the event
-- outlives every row that points at it. Rows written before keep their text.
alter table api_request_log add column response_event_id uuid;
