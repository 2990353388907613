-- Customer keyword search (GET /v1/customers?keyword=) matched `%keyword%` against the names and
-- the email by walking every customer of the business, newest first, until a page was full: a
-- rare keyword read them all, so the request's cost grew with the number of customers. A trigram
-- index on the same text finds the few customers that can match (modules/customers/repo.ts,
-- SEARCH_TEXT, writes the expression the same way). pg_trgm is a trusted extension: a database
-- owner without superuser rights may create it (PostgreSQL 13+); PGlite loads it at open.
create extension if not exists pg_trgm;
create index customers_search_idx on customers using gin (
  (coalesce(first_name, '') || ' ' || coalesce(last_name, '') || ' ' || email || ' ' || coalesce(business_name, '')) gin_trgm_ops
);
