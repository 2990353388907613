-- Every process caches API key lookups; a changed key (rotated, expired, revoked, deleted) or a
-- business whose settings changed (rate-limit quota) must leave every cache within a second.
-- These triggers tell every listening process (channel fsapi_auth) at commit, whoever wrote:
-- an API process, the dashboard, or the operator CLI. Payload: 'key:<sha256 hex>' or 'tenant:<id>'.
create or replace function fsapi_notify_auth_change() returns trigger
language plpgsql as $$
begin
  if tg_table_name = 'api_keys' then
    if tg_op = 'DELETE' then
      perform pg_notify('fsapi_auth', 'key:' || encode(old.key_hash, 'hex'));
    else
      perform pg_notify('fsapi_auth', 'key:' || encode(new.key_hash, 'hex'));
    end if;
  elsif tg_op = 'DELETE' then
    perform pg_notify('fsapi_auth', 'tenant:' || old.id::text);
  else
    perform pg_notify('fsapi_auth', 'tenant:' || new.id::text);
  end if;
  return null;
end
$$;

create trigger api_keys_notify_auth_change
  after update or delete on api_keys
  for each row execute function fsapi_notify_auth_change();

create trigger tenants_notify_auth_change
  after update or delete on tenants
  for each row execute function fsapi_notify_auth_change();
