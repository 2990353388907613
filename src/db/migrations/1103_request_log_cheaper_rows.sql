-- Cheaper request log rows. Every /v1 request, each account read too, inserts one: under the read
-- load the row cost PostgreSQL several times what the read did, and its five index insertions
-- were about half of the row's cost (in process, with all four secondary indexes dropped, about
-- 45 -> 23 us a row).
-- - The primary key becomes (tenant_id, environment, id): it is the list's index, so the separate
--   (tenant_id, environment, id desc) index goes. Every read of the log is scoped to a business
--   and environment (the detail page, the list, retention's per-business deletes); a B-tree is
--   scanned backwards for newest-first.
-- - The status index keeps only the answers that were not 2xx. Finding errors among many
--   successes is what it is for; a 2xx filter walks the list's index, where most rows match.
-- Measured: inserting 30,000 rows a statement of 100 at a time cost PostgreSQL 21.9-23.6 us of CPU
-- per row against 28.8-36.2 us before (three alternating pairs); under `npm run bench -- reads`,
-- 0.051-0.055 ms of PostgreSQL CPU per account read against 0.058-0.073 (three alternating pairs).
drop index api_request_log_tenant_idx;
alter table api_request_log drop constraint api_request_log_pkey;
alter table api_request_log add constraint api_request_log_pkey primary key (tenant_id, environment, id);
drop index api_request_log_status_idx;
create index api_request_log_status_idx on api_request_log (tenant_id, environment, status_class, id desc) where status_class <> 2;
