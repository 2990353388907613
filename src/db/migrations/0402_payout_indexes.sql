-- The payout dispatch job looks for external transfers still pending, across businesses.
create index transfers_pending_payouts_idx on transfers (id) where status = 'pending' and destination_type = 'external_account';
