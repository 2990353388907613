-- Maker-checker approvals. A business setting (`approvals` in tenant settings) puts FX orders,
-- payouts above a threshold and new payees in `waiting_approval` until a dashboard user allowed
-- to approve (owner or admin, never the creator) approves or rejects it. One row per item waiting
-- (or once waiting) for a decision; the item's own table keeps its own status beside it. Every
-- decision is a guarded update (`where status = 'waiting_approval'`), so approve, reject and
-- expiry racing for the same row take effect exactly once.
create table approvals (
  id uuid primary key,
  tenant_id uuid not null,
  environment text not null,
  kind text not null check (kind in ('fx_order', 'payout', 'payee')),
  -- The FX order, transfer or external account waiting.
  subject_id uuid not null,
  status text not null default 'waiting_approval' check (status in ('waiting_approval', 'approved', 'rejected', 'expired')),
  -- What the approver sees, written when the approval is requested.
  summary text not null,
  amount bigint,
  currency text,
  -- A dashboard user (null: created with an API key) and the creator's role (`api_key` then).
  created_by_user_id uuid,
  created_by_role text not null,
  decided_by_user_id uuid,
  decided_by_email text,
  decided_at timestamptz,
  reason text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz
);
create unique index approvals_subject_idx on approvals (tenant_id, environment, kind, subject_id);
create index approvals_list_idx on approvals (tenant_id, environment, id desc);
create index approvals_status_idx on approvals (tenant_id, environment, status, id desc);
-- The expiry job scans only waiting approvals that are due.
create index approvals_expiry_idx on approvals (expires_at) where status = 'waiting_approval';

-- FX orders: the reference's maker-checker status and fields.
alter table fx_orders drop constraint fx_orders_status_check;
alter table fx_orders add constraint fx_orders_status_check
  check (status in ('waiting_approval', 'pending', 'completed', 'cancelled', 'expired', 'rejected'));
alter table fx_orders add column created_by_user_id uuid;
alter table fx_orders add column created_by_role text;
alter table fx_orders add column approved_by_user_id uuid;
alter table fx_orders add column approved_at timestamptz;
alter table fx_orders add column rejected_by_user_id uuid;
alter table fx_orders add column rejected_at timestamptz;

-- Payees: a new payee waiting for approval stays `pending` and is not verified (so never
-- `active`, never usable for payouts) until approved.
alter table external_accounts add column approval_status text
  check (approval_status in ('waiting_approval', 'approved', 'rejected', 'expired'));
