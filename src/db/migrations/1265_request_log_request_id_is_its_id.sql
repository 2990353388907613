-- A request whose id the server made (no valid X-Request-Id sent) is logged under that id: the
-- row's id is the request id, and `request_id` stays null. Both are UUIDv7s taken when the
-- request arrived, so the log's order and date filters are unchanged. Before, each row held the
-- request id a second time as text and each paid an entry of api_request_log_request_id_idx
-- (about 170 bytes of heap and WAL a request with its page splits), though nearly every request
-- id is the server's. The index now holds only the ids clients sent; a search for a request id
-- that is a UUID looks at the primary key too (request-log/repo.ts, dashboard/search-repo.ts), and
-- readers show coalesce(request_id, id). Rows written before keep their request_id and are found
-- as they were.
alter table api_request_log alter column request_id drop not null;
drop index api_request_log_request_id_idx;
create index api_request_log_request_id_idx on api_request_log (tenant_id, environment, request_id) where request_id is not null;
