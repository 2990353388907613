-- FX orders with destination_type 'ssi' (standing settlement instruction: an active external
-- account of the order's customer). destination_id is then the external account; the proceeds are
-- credited to the customer's account in the destination currency (settlement_account_id) and paid
-- out from there to the external account by a payout (payout_transfer_id), in the same transaction.
alter table fx_orders add column settlement_account_id uuid;
alter table fx_orders add column payout_transfer_id uuid;
create index fx_orders_settlement_idx on fx_orders (tenant_id, environment, settlement_account_id, id desc)
  where settlement_account_id is not null;
