-- An Idempotency-Key record inserted completed (a batch's new key, http/idempotency-batch.ts)
-- carries no claim: its lease (locked_until), its token (claim_token) and its owner (owner_id)
-- only say who works on a key in progress, and nothing reads them once it is completed (a takeover
-- of a completed record looks at its retention alone). They were 40 bytes of every such row, on
-- every transfer. Dropping NOT NULL changes only the catalog; the check, NOT VALID, holds for new
-- and changed rows without scanning the old ones (all of which have both).
alter table idempotency_keys alter column locked_until drop not null;
alter table idempotency_keys alter column claim_token drop not null;
alter table idempotency_keys add constraint idempotency_keys_claim_in_progress
  check (state <> 'in_progress' or (locked_until is not null and claim_token is not null)) not valid;
