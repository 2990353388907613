-- The dashboard's search finds a transfer by the client's own reference (client_reference). Partial:
-- only transfers that carry one pay for the index entry; the rest of the write path is unchanged.
create index transfers_client_reference_idx on transfers (tenant_id, environment, client_reference)
  where client_reference is not null;
